#include "pipeline/tfrecord.h"

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::pipeline {

absl::StatusOr<std::unique_ptr<TfRecordFiles>> TfRecordFiles::Open(
    const std::vector<std::string>& paths) {
  auto files = std::unique_ptr<TfRecordFiles>(new TfRecordFiles());
  files->paths_ = paths;
  files->open_.resize(paths.size());
  for (size_t f = 0; f < paths.size(); ++f) {
    std::ifstream in(paths[f], std::ios::binary | std::ios::ate);
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot open TFRecord file '",
                                              paths[f],
                                              "': ", std::strerror(errno)));
    }
    const int64_t end = static_cast<int64_t>(in.tellg());
    int64_t at = 0;
    while (at < end) {
      unsigned char header[12];
      in.seekg(at);
      if (end - at < 12 || !in.read(reinterpret_cast<char*>(header), 12)) {
        return absl::DataLossError(
            absl::StrCat("TFRecord file '", paths[f],
                         "': a record header cut short at byte ", at));
      }
      uint64_t length = 0;
      for (int b = 7; b >= 0; --b) length = (length << 8) | header[b];
      if (length > static_cast<uint64_t>(end - at - 12) ||
          static_cast<int64_t>(length) + 16 > end - at) {
        return absl::DataLossError(absl::StrCat(
            "TFRecord file '", paths[f], "': the record at byte ", at,
            " claims ", length, " bytes, more than the file holds"));
      }
      files->records_.push_back(
          Record{static_cast<int>(f), at + 12, static_cast<int64_t>(length)});
      files->largest_ = std::max(files->largest_, static_cast<int64_t>(length));
      at += 12 + static_cast<int64_t>(length) + 4;
    }
  }
  if (files->records_.empty()) {
    return absl::InvalidArgumentError("the TFRecord files hold no record");
  }
  return files;
}

std::string TfRecordFiles::Describe(int64_t i) const {
  const Record& r = records_[i];
  return absl::StrCat(paths_[r.file], "@", r.offset - 12);
}

absl::Status TfRecordFiles::Read(int64_t i, std::string* data) {
  const Record& r = records_[i];
  auto& in = open_[r.file];
  if (in == nullptr) {
    in = std::make_unique<std::ifstream>(paths_[r.file], std::ios::binary);
  }
  data->resize(r.length);
  in->clear();
  in->seekg(r.offset);
  if (!in->read(data->data(), r.length)) {
    return absl::DataLossError(
        absl::StrCat("cannot read the record at ", Describe(i)));
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
