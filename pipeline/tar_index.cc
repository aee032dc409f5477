#include "pipeline/tar_index.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "pipeline/tar_index_cache.h"

namespace actorflow::internal::pipeline {
namespace {

constexpr int64_t kBlock = 512;

// A NUL-terminated (or full) field.
std::string Field(const char* at, size_t width) {
  return std::string(at, strnlen(at, width));
}

// An octal number field (spaces and NULs around it), or -1.
int64_t Octal(const char* at, size_t width) {
  int64_t value = 0;
  bool digits = false;
  for (size_t i = 0; i < width; ++i) {
    const char c = at[i];
    if (c >= '0' && c <= '7') {
      value = value * 8 + (c - '0');
      digits = true;
    } else if (c == ' ' || c == '\0') {
      if (digits) break;
    } else {
      return -1;
    }
  }
  return digits ? value : -1;
}

bool ChecksumOk(const char* header) {
  const int64_t stored = Octal(header + 148, 8);
  int64_t sum = 0;
  for (int i = 0; i < kBlock; ++i) {
    sum += (i >= 148 && i < 156) ? ' ' : static_cast<unsigned char>(header[i]);
  }
  return stored == sum;
}

// The "path" record of a pax extended header, if any.
std::string PaxPath(const std::string& records) {
  size_t at = 0;
  while (at < records.size()) {
    const size_t space = records.find(' ', at);
    if (space == std::string::npos) break;
    const int64_t length = std::atoll(records.c_str() + at);
    if (length <= 0 || at + length > records.size()) break;
    absl::string_view record(records.data() + space + 1,
                             at + length - space - 2);  // drops the '\n'
    if (record.substr(0, 5) == "path=") return std::string(record.substr(5));
    at += length;
  }
  return "";
}

}  // namespace

absl::StatusOr<std::vector<TarMember>> ListTar(ShardFiles* files, int file) {
  if (!files->remote(file)) return ScanTar(files, file);
  const std::string& url = files->path(file);
  if (auto cached =
          LoadTarIndex(url, files->size(file), files->modified(file))) {
    return *std::move(cached);
  }
  auto members = ScanTar(files, file);
  if (members.ok()) {
    SaveTarIndex(url, files->size(file), files->modified(file), *members);
  }
  return members;
}

absl::StatusOr<std::vector<TarMember>> ScanTar(ShardFiles* files, int file) {
  const std::string& path = files->path(file);
  const int64_t file_size = files->size(file);
  std::vector<TarMember> members;
  std::string long_name;  // from a GNU 'L' or pax header, for the next one
  char header[kBlock];
  std::string data;
  int64_t offset = 0;
  while (offset + kBlock <= file_size) {
    auto read = files->Read(file, offset, kBlock, header);
    if (!read.ok()) return read.status();
    if (*read < kBlock) break;
    offset += kBlock;
    if (header[0] == '\0') break;  // the end: two zero blocks
    if (!ChecksumOk(header)) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", path, "': no tar header at byte ", offset - kBlock,
                       " (a damaged or non-tar file)"));
    }
    const int64_t size = Octal(header + 124, 12);
    if (size < 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "'", path, "': bad size field at byte ", offset - kBlock));
    }
    const char type = header[156];
    const int64_t padded = (size + kBlock - 1) / kBlock * kBlock;
    if (type == 'L' || type == 'x') {
      data.resize(size);
      read = files->Read(file, offset, size, data.data());
      if (!read.ok()) return read.status();
      if (*read < size) break;
      offset += padded;
      long_name = type == 'L' ? Field(data.data(), data.size()) : PaxPath(data);
      continue;
    }
    std::string name = long_name;
    long_name.clear();
    if (name.empty()) {
      name = Field(header, 100);
      const std::string prefix = Field(header + 345, 155);
      if (std::memcmp(header + 257, "ustar", 5) == 0 && !prefix.empty()) {
        name = prefix + "/" + name;
      }
    }
    const int64_t available = std::min(size, file_size - offset);
    if (type == '0' || type == '\0' || type == '7') {
      members.push_back(TarMember{name, offset, size, available});
    }
    if (available < size) break;  // the file ends inside this member
    offset += padded;
  }
  return members;
}

absl::StatusOr<std::vector<TarSample>> IndexWebDataset(
    ShardFiles* files, std::vector<int64_t>* per_file) {
  std::vector<TarSample> samples;
  if (per_file != nullptr) per_file->clear();
  for (int f = 0; f < files->count(); ++f) {
    const size_t before = samples.size();
    auto members = ListTar(files, f);
    if (!members.ok()) return members.status();
    bool first = true;  // a sample never spans two files
    for (const TarMember& m : *members) {
      const size_t slash = m.name.rfind('/');
      const size_t dot =
          m.name.find('.', slash == std::string::npos ? 0 : slash + 1);
      if (dot == std::string::npos) continue;  // no extension: not data
      const std::string key = m.name.substr(0, dot);
      const std::string ext = m.name.substr(dot + 1);
      if (first || samples.back().key != key) {
        samples.push_back(TarSample{key, {}});
        first = false;
      }
      samples.back().components[ext] =
          TarComponent{f, m.offset, m.size, m.available};
    }
    if (per_file != nullptr) {
      per_file->push_back(static_cast<int64_t>(samples.size() - before));
    }
  }
  return samples;
}

}  // namespace actorflow::internal::pipeline
