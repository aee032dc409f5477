#include "pipeline/dataset.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace actorflow::internal::pipeline {
namespace fs = std::filesystem;

namespace {

bool IsImageName(const fs::path& path) {
  const std::string ext = absl::AsciiStrToLower(path.extension().string());
  return ext == ".jpg" || ext == ".jpeg" || ext == ".png";
}

}  // namespace

absl::StatusOr<std::vector<FileEntry>> ListImageDirectory(
    const std::string& dir) {
  std::error_code error;
  if (!fs::is_directory(dir, error)) {
    return absl::NotFoundError(
        absl::StrCat("'", dir, "' is not a directory",
                     error ? absl::StrCat(" (", error.message(), ")") : ""));
  }
  std::vector<std::pair<std::string, std::string>> found;  // class, path
  fs::recursive_directory_iterator it(
      dir, fs::directory_options::follow_directory_symlink, error);
  for (; !error && it != fs::recursive_directory_iterator();
       it.increment(error)) {
    if (!it->is_regular_file(error) || !IsImageName(it->path())) continue;
    const fs::path relative = fs::relative(it->path(), dir, error);
    std::string klass;
    if (std::distance(relative.begin(), relative.end()) > 1) {
      klass = relative.begin()->string();
    }
    found.emplace_back(std::move(klass), it->path().string());
  }
  if (error) {
    return absl::UnavailableError(
        absl::StrCat("listing '", dir, "': ", error.message()));
  }
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  std::map<std::string, int32_t> labels;
  for (const auto& [klass, path] : found) labels.emplace(klass, 0);
  int32_t next = 0;
  for (auto& [klass, label] : labels) label = next++;
  std::vector<FileEntry> files;
  files.reserve(found.size());
  for (auto& [klass, path] : found) {
    files.push_back(FileEntry{std::move(path), labels[klass]});
  }
  return files;
}

absl::StatusOr<std::vector<FileEntry>> ReadFileList(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    return absl::NotFoundError(absl::StrCat("cannot open file list '", path,
                                            "': ", std::strerror(errno)));
  }
  const fs::path base = fs::path(path).parent_path();
  std::vector<FileEntry> files;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    std::vector<absl::string_view> fields =
        absl::StrSplit(text, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    FileEntry entry;
    const fs::path file{std::string(fields[0])};
    entry.path = file.is_absolute() ? file.string() : (base / file).string();
    if (fields.size() > 2 ||
        (fields.size() == 2 && !absl::SimpleAtoi(fields[1], &entry.label))) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", line_no, ": expected 'path [label]', got '", text, "'"));
    }
    files.push_back(std::move(entry));
  }
  return files;
}

absl::Status ReadWholeFile(const std::string& path, Bytes* out) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("cannot open: ", std::strerror(errno)));
  }
  // Sized from the file's length, then read straight into place; a file
  // that grows meanwhile is read to its end all the same.
  long size = 0;  // NOLINT(runtime/int): ftell's type
  if (std::fseek(file, 0, SEEK_END) == 0) size = std::ftell(file);
  std::rewind(file);
  out->resize(size > 0 ? static_cast<size_t>(size) : 0);
  size_t done = std::fread(out->data(), 1, out->size(), file);
  out->resize(done);
  uint8_t chunk[1 << 12];
  size_t got;
  while ((got = std::fread(chunk, 1, sizeof(chunk), file)) > 0) {
    out->insert(out->end(), chunk, chunk + got);
  }
  const bool failed = std::ferror(file);
  std::fclose(file);
  if (failed) return absl::DataLossError("read error");
  return absl::OkStatus();
}

std::string FashionMnistDir() {
  const char* dir = std::getenv("ACTORFLOW_FASHION_MNIST");
  return dir != nullptr && *dir != '\0' ? dir : kFashionMnistDir;
}

void ShardRange(int64_t count, int64_t shard, int64_t shards, int64_t* begin,
                int64_t* end) {
  *begin = count * shard / shards;
  *end = count * (shard + 1) / shards;
}

ShardPlan::ShardPlan(int64_t count, int64_t shard_id, int64_t num_shards,
                     bool shuffle, bool stick_to_shard,
                     const std::vector<int64_t>& groups)
    : count_(count),
      shard_id_(shard_id),
      num_shards_(num_shards),
      stick_to_shard_(stick_to_shard) {
  per_shard_ = (count + num_shards - 1) / num_shards;
  if (!shuffle) return;
  // Fisher-Yates from a fixed seed: the same on every rank. Over the
  // groups when there are any (each a unit), else over the samples.
  std::vector<int64_t> starts;
  std::vector<int64_t> sizes = groups;
  int64_t total = 0;
  for (int64_t size : sizes) total += size;
  if (total != count) sizes.assign(count, 1);
  int64_t start = 0;
  for (int64_t size : sizes) {
    starts.push_back(start);
    start += size;
  }
  std::vector<int64_t> order(sizes.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  SampleRng rng(/*seed=*/0x5ba4d, /*op=*/0, 0, 0);
  for (int64_t i = static_cast<int64_t>(order.size()) - 1; i > 0; --i) {
    std::swap(order[i], order[rng.Below(i + 1)]);
  }
  permutation_.reserve(count);
  for (int64_t g : order) {
    for (int64_t i = 0; i < sizes[g]; ++i)
      permutation_.push_back(starts[g] + i);
  }
}

int64_t ShardPlan::Index(int64_t epoch, int64_t position) const {
  const int64_t shard =
      stick_to_shard_ ? shard_id_ : (shard_id_ + epoch) % num_shards_;
  int64_t begin = 0, end = 0;
  ShardRange(count_, shard, num_shards_, &begin, &end);
  // A shard left empty (fewer samples than shards) repeats the sample at
  // its start, which is within the dataset.
  const int64_t at =
      begin +
      std::clamp<int64_t>(position, 0, std::max<int64_t>(end - begin - 1, 0));
  return permutation_.empty() ? at : permutation_[at];
}

std::vector<int64_t> EpochOrder(int64_t n, int64_t window, uint64_t seed,
                                int64_t epoch) {
  std::vector<int64_t> order;
  order.reserve(n);
  if (window <= 1) {
    for (int64_t i = 0; i < n; ++i) order.push_back(i);
    return order;
  }
  SampleRng rng(seed, /*op=*/0x5eed, static_cast<uint64_t>(epoch), 0);
  std::vector<int64_t> slots;
  int64_t next = 0;
  while (next < n && static_cast<int64_t>(slots.size()) < window) {
    slots.push_back(next++);
  }
  while (!slots.empty()) {
    const int64_t pick = rng.Below(static_cast<int64_t>(slots.size()));
    order.push_back(slots[pick]);
    if (next < n) {
      slots[pick] = next++;
    } else {
      slots[pick] = slots.back();
      slots.pop_back();
    }
  }
  return order;
}

namespace {

// Opens an IDX file and reads its header; the file is left at the data.
absl::StatusOr<gzFile> OpenIdx(const std::string& path,
                               std::vector<int64_t>* dims) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrCat("cannot open IDX file '", path,
                                            "': ", std::strerror(errno)));
  }
  auto fail = [&](const std::string& why) {
    gzclose(file);
    return absl::DataLossError(absl::StrCat("IDX file '", path, "': ", why));
  };
  uint8_t magic[4];
  if (gzread(file, magic, 4) != 4) return fail("shorter than its header");
  if (magic[0] != 0 || magic[1] != 0 || magic[2] != 0x08 || magic[3] < 1 ||
      magic[3] > 4) {
    return fail(absl::StrCat("not an IDX file of unsigned bytes (magic ",
                             absl::Hex(magic[2]), " ", absl::Hex(magic[3]),
                             ")"));
  }
  dims->clear();
  for (int d = 0; d < magic[3]; ++d) {
    uint8_t be[4];
    if (gzread(file, be, 4) != 4) return fail("shorter than its header");
    dims->push_back((int64_t{be[0]} << 24) | (be[1] << 16) | (be[2] << 8) |
                    be[3]);
  }
  return file;
}

}  // namespace

absl::StatusOr<std::vector<int64_t>> ReadIdxHeader(const std::string& path) {
  std::vector<int64_t> dims;
  auto file = OpenIdx(path, &dims);
  if (!file.ok()) return file.status();
  gzclose(*file);
  return dims;
}

absl::StatusOr<IdxArray> ReadIdx(const std::string& path) {
  IdxArray array;
  auto opened = OpenIdx(path, &array.dims);
  if (!opened.ok()) return opened.status();
  gzFile file = *opened;
  int64_t total = 1;
  for (int64_t dim : array.dims) total *= dim;
  if (total > (int64_t{1} << 32)) {
    gzclose(file);
    return absl::DataLossError(
        absl::StrCat("IDX file '", path, "': implausibly large"));
  }
  array.data.resize(total);
  int64_t done = 0;
  while (done < total) {
    const int want = static_cast<int>(std::min<int64_t>(total - done, 1 << 30));
    const int got = gzread(file, array.data.data() + done, want);
    if (got <= 0) {
      gzclose(file);
      return absl::DataLossError(absl::StrCat("IDX file '", path,
                                              "': truncated: ", done, " of ",
                                              total, " data bytes"));
    }
    done += got;
  }
  gzclose(file);
  return array;
}

}  // namespace actorflow::internal::pipeline
