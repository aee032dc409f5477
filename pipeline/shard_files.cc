#include "pipeline/shard_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::pipeline {

ShardFiles::ShardFiles(ShardReadOptions options) : options_(options) {}

ShardFiles::~ShardFiles() {
  for (Shard& shard : shards_) {
    if (shard.fd >= 0) close(shard.fd);
  }
}

absl::StatusOr<int> ShardFiles::Add(const std::string& path) {
  Shard shard;
  shard.path = path;
  if (IsHttpUrl(path)) {
    if (http_ == nullptr) http_ = std::make_unique<HttpClient>(options_.retry);
    auto stat = http_->Head(path);
    if (!stat.ok()) return stat.status();
    shard.size = stat->size;
    shard.modified = stat->modified;
    shard.remote = true;
  } else {
    shard.fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (shard.fd < 0 || fstat(shard.fd, &st) != 0) {
      const int error = errno;
      if (shard.fd >= 0) close(shard.fd);
      return absl::NotFoundError(
          absl::StrCat("cannot open '", path, "': ", std::strerror(error)));
    }
    shard.size = st.st_size;
  }
  shards_.push_back(std::move(shard));
  return static_cast<int>(shards_.size() - 1);
}

absl::StatusOr<int64_t> ShardFiles::Read(int file, int64_t offset,
                                         int64_t length, char* out) {
  const Shard& shard = shards_[file];
  length = std::max<int64_t>(0, std::min(length, shard.size - offset));
  if (shard.remote) {
    absl::Status read = ReadRemote(file, offset, length, out);
    if (!read.ok()) return read;
    return length;
  }
  int64_t done = 0;
  while (done < length) {
    const ssize_t n = pread(shard.fd, out + done, length - done, offset + done);
    if (n < 0 && errno == EINTR) continue;
    if (n == 0) break;  // the file shrank since it was opened
    if (n < 0) {
      return absl::DataLossError(
          absl::StrCat("'", shard.path, "': cannot read ", length, " bytes at ",
                       offset, ": ", std::strerror(errno)));
    }
    done += n;
  }
  return done;
}

absl::Status ShardFiles::ReadRemote(int file, int64_t offset, int64_t length,
                                    char* out) {
  if (length == 0) return absl::OkStatus();
  const int64_t block = options_.block_bytes;
  const int64_t first = offset / block;
  const int64_t last = (offset + length - 1) / block;
  absl::Status fetched = Fetch(file, first, last);
  if (!fetched.ok()) return fetched;
  for (int64_t k = first; k <= last; ++k) {
    Block& held = blocks_.at({file, k});
    used_.splice(used_.begin(), used_, held.used);
    const int64_t begin = std::max(offset, k * block);
    const int64_t end = std::min(offset + length, (k + 1) * block);
    if (end - k * block > static_cast<int64_t>(held.bytes.size())) {
      return absl::DataLossError(absl::StrCat(
          "'", shards_[file].path, "': the server sent ", held.bytes.size(),
          " bytes at ", k * block, " where its size says ",
          std::min(block, shards_[file].size - k * block)));
    }
    std::memcpy(out + (begin - offset), held.bytes.data() + (begin - k * block),
                end - begin);
  }
  // Evict only after the copy: a read may need more blocks than are held.
  while (static_cast<int>(used_.size()) > std::max(options_.blocks, 1)) {
    blocks_.erase(used_.back());
    used_.pop_back();
  }
  return absl::OkStatus();
}

absl::Status ShardFiles::Fetch(int file, int64_t first, int64_t last) {
  const int64_t block = options_.block_bytes;
  for (int64_t k = first; k <= last;) {
    if (blocks_.count({file, k}) > 0) {
      ++k;
      continue;
    }
    // A run of missing blocks: one request.
    int64_t end = k;
    while (end + 1 <= last && blocks_.count({file, end + 1}) == 0) ++end;
    const int64_t begin_byte = k * block;
    const int64_t bytes =
        std::min((end + 1) * block, shards_[file].size) - begin_byte;
    std::string run;
    absl::Status read =
        http_->Read(shards_[file].path, begin_byte, bytes, &run);
    if (!read.ok()) return read;
    for (int64_t b = k; b <= end; ++b) {
      const int64_t at = (b - k) * block;
      used_.push_front({file, b});
      Block& held = blocks_[{file, b}];
      held.used = used_.begin();
      if (at < static_cast<int64_t>(run.size())) {
        held.bytes.assign(run, at, block);
      }
    }
    k = end + 1;
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
