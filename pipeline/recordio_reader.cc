// pipeline.recordio_reader: MXNet RecordIO images and their labels,
// sharded and shuffled as every reader.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "pipeline/stage_kernel_util.h"
#include "pipeline/stage_kernels.h"

namespace actorflow::internal::pipeline {

absl::StatusOr<int64_t> RecordIoReaderKernel::Open(
    const KernelInitContext& ctx) {
  auto paths = ctx.StringListAttr("paths");
  if (!paths.ok()) return paths.status();
  if (paths->empty()) {
    return absl::InvalidArgumentError(
        "attr 'paths': the RecordIO (.rec) files, at least one");
  }
  auto files = RecordIoFiles::Open(*paths);
  if (!files.ok()) {
    return absl::Status(
        files.status().code(),
        absl::StrCat("attr 'paths': ", files.status().message()));
  }
  files_ = std::move(*files);
  read_ = -1;
  return files_->size();
}

int64_t RecordIoReaderKernel::LargestSample(int k) const {
  if (files_ == nullptr) return -1;
  return k == 0 ? files_->largest_image() : files_->most_labels() * 4;
}

absl::Status RecordIoReaderKernel::Fill(int64_t index, int k,
                                        SampleSlots::Slot* slot, bool*) {
  slot->name = files_->Describe(index);
  if (read_ != index) {
    read_ = -1;
    absl::Status ok = files_->Read(index, &image_, &labels_);
    if (!ok.ok()) return ok;
    read_ = index;
  }
  if (k == 0) {
    slot->sample.Reshape(
        DT_UINT8, std::vector<int64_t>{static_cast<int64_t>(image_.size())});
    std::memcpy(slot->sample.storage.data(), image_.data(), image_.size());
  } else {
    slot->sample.Reshape(
        DT_FLOAT32, std::vector<int64_t>{static_cast<int64_t>(labels_.size())});
    std::memcpy(slot->sample.storage.data(), labels_.data(),
                labels_.size() * sizeof(float));
  }
  return absl::OkStatus();
}

ACTORFLOW_REGISTER_KERNEL("pipeline.recordio_reader", RecordIoReaderKernel);

}  // namespace actorflow::internal::pipeline
