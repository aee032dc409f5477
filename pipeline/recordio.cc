#include "pipeline/recordio.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::pipeline {

namespace {

constexpr int64_t kImageHeaderBytes = 24;

uint32_t Le32(const unsigned char* p) {
  return uint32_t{p[0]} | uint32_t{p[1]} << 8 | uint32_t{p[2]} << 16 |
         uint32_t{p[3]} << 24;
}

int64_t Padded(int64_t length) { return (length + 3) / 4 * 4; }

}  // namespace

absl::StatusOr<std::unique_ptr<RecordIoFiles>> RecordIoFiles::Open(
    const std::vector<std::string>& paths) {
  auto files = std::unique_ptr<RecordIoFiles>(new RecordIoFiles());
  files->paths_ = paths;
  files->open_.resize(paths.size());
  for (size_t f = 0; f < paths.size(); ++f) {
    std::ifstream in(paths[f], std::ios::binary | std::ios::ate);
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot open RecordIO file '",
                                              paths[f],
                                              "': ", std::strerror(errno)));
    }
    const int64_t end = static_cast<int64_t>(in.tellg());
    auto broken = [&](int64_t at, const std::string& what) {
      return absl::DataLossError(absl::StrCat("RecordIO file '", paths[f],
                                              "': ", what, " at byte ", at));
    };
    int64_t at = 0;
    while (at < end) {
      const int64_t begin = at;
      int64_t data_bytes = 0;
      unsigned char first[8 + kImageHeaderBytes] = {};
      for (int part = 0;; ++part) {
        unsigned char header[8];
        in.seekg(at);
        if (end - at < 8 || !in.read(reinterpret_cast<char*>(header), 8)) {
          return broken(at, "a record header cut short");
        }
        if (Le32(header) != kRecordIoMagic) {
          return broken(at, "no record's magic number");
        }
        const uint32_t word = Le32(header + 4);
        const uint32_t flag = word >> 29;
        const int64_t length = word & ((1u << 29) - 1);
        if ((part == 0) != (flag == 0 || flag == 1) || flag > 3) {
          return broken(at, absl::StrCat("a record part of flag ", flag,
                                         part == 0 ? " first" : " inside"));
        }
        if (length > end - at - 8) {
          return broken(at, absl::StrCat("a record claiming ", length,
                                         " bytes, more than the file holds"));
        }
        if (part == 0) {
          std::memcpy(first, header, 8);
          const int64_t n = std::min<int64_t>(length, kImageHeaderBytes);
          if (!in.read(reinterpret_cast<char*>(first + 8), n)) {
            return broken(at, "a record cut short");
          }
        }
        data_bytes += length + (part > 0 ? 4 : 0);  // the magic rejoined
        at = std::min(end, at + 8 + Padded(length));
        if (flag == 0 || flag == 3) break;
      }
      if (data_bytes < kImageHeaderBytes) {
        return broken(begin, absl::StrCat("an image record of ", data_bytes,
                                          " bytes, under its 24-byte header"));
      }
      // Labels that do not fit the record are Read's error, per record.
      const int64_t labels = Le32(first + 8);
      const int64_t label_bytes = labels * 4;
      files->records_.push_back(Record{static_cast<int>(f), begin, at});
      files->largest_image_ = std::max(
          files->largest_image_,
          std::max<int64_t>(0, data_bytes - kImageHeaderBytes - label_bytes));
      files->most_labels_ =
          std::max(files->most_labels_, std::max<int64_t>(1, labels));
    }
  }
  if (files->records_.empty()) {
    return absl::InvalidArgumentError("the RecordIO files hold no record");
  }
  return files;
}

std::string RecordIoFiles::Describe(int64_t i) const {
  const Record& r = records_[i];
  return absl::StrCat(paths_[r.file], "@", r.offset);
}

absl::Status RecordIoFiles::ReadData(int64_t i, std::string* data) {
  const Record& r = records_[i];
  auto& in = open_[r.file];
  if (in == nullptr) {
    in = std::make_unique<std::ifstream>(paths_[r.file], std::ios::binary);
  }
  std::string raw(static_cast<size_t>(r.end - r.offset), '\0');
  in->clear();
  in->seekg(r.offset);
  if (!in->read(raw.data(), static_cast<std::streamsize>(raw.size()))) {
    return absl::DataLossError(
        absl::StrCat("cannot read the record at ", Describe(i)));
  }
  data->clear();
  const auto* bytes = reinterpret_cast<const unsigned char*>(raw.data());
  for (size_t at = 0; at + 8 <= raw.size();) {
    const uint32_t word = Le32(bytes + at + 4);
    const size_t length = word & ((1u << 29) - 1);
    if (at > 0) {
      const unsigned char magic[4] = {0x0a, 0x23, 0xd7, 0xce};
      data->append(reinterpret_cast<const char*>(magic), 4);
    }
    data->append(raw, at + 8, length);
    at += 8 + static_cast<size_t>(Padded(static_cast<int64_t>(length)));
  }
  return absl::OkStatus();
}

absl::Status RecordIoFiles::Read(int64_t i, std::string* image,
                                 std::vector<float>* labels) {
  std::string data;
  absl::Status ok = ReadData(i, &data);
  if (!ok.ok()) return ok;
  if (static_cast<int64_t>(data.size()) < kImageHeaderBytes) {
    // The scan saw more: the file changed since.
    return absl::DataLossError(absl::StrCat("the record at ", Describe(i),
                                            " is shorter than its header"));
  }
  const auto* p = reinterpret_cast<const unsigned char*>(data.data());
  const uint32_t flag = Le32(p);
  const int64_t label_bytes = int64_t{flag} * 4;
  if (kImageHeaderBytes + label_bytes > static_cast<int64_t>(data.size())) {
    return absl::DataLossError(
        absl::StrCat("the image record at ", Describe(i), " has ", flag,
                     " labels, more than its ", data.size(), " bytes hold"));
  }
  labels->assign(flag == 0 ? 1 : flag, 0.f);
  if (flag == 0) {
    std::memcpy(labels->data(), p + 4, 4);
  } else {
    std::memcpy(labels->data(), p + kImageHeaderBytes, label_bytes);
  }
  image->assign(data, kImageHeaderBytes + label_bytes, std::string::npos);
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
