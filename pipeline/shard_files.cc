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
    auto size = http_->Size(path);
    if (!size.ok()) return size.status();
    shard.size = *size;
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
  for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
    const int64_t end = it->begin + static_cast<int64_t>(it->bytes.size());
    if (it->file == file && it->begin <= offset && offset + length <= end) {
      std::memcpy(out, it->bytes.data() + (offset - it->begin), length);
      blocks_.splice(blocks_.begin(), blocks_, it);
      return absl::OkStatus();
    }
  }
  // A miss: fetch from `offset` on, at least a block (the samples that
  // follow in the shard are the ones read next).
  Block block;
  block.file = file;
  block.begin = offset;
  const int64_t fetch = std::min(std::max(length, options_.read_ahead_bytes),
                                 shards_[file].size - offset);
  absl::Status read =
      http_->Read(shards_[file].path, offset, fetch, &block.bytes);
  if (!read.ok()) return read;
  if (static_cast<int64_t>(block.bytes.size()) < length) {
    return absl::DataLossError(absl::StrCat(
        "'", shards_[file].path, "': the server sent ", block.bytes.size(),
        " bytes at ", offset, " where its size says ", length));
  }
  std::memcpy(out, block.bytes.data(), length);
  blocks_.push_front(std::move(block));
  while (static_cast<int>(blocks_.size()) >
         std::max(options_.read_ahead_blocks, 1)) {
    blocks_.pop_back();
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
