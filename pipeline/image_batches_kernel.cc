#include "pipeline/image_batches_kernel.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "pipeline/sample.h"

namespace actorflow::internal::pipeline {

absl::Status ImageBatchesKernel::Init(const KernelInitContext& ctx) {
  if (!ctx.inputs().empty()) {
    return absl::InvalidArgumentError(
        "consumed_regst_desc_id: image_batches is a source (it consumes "
        "nothing)");
  }
  auto dir = ctx.StringAttrOr("dir", "");
  auto list = ctx.StringAttrOr("list", "");
  auto size = ctx.IntAttr("size");
  auto channels = ctx.IntAttrOr("channels", 1);
  auto attrs = ReadBatchSourceAttrs(ctx);
  for (const absl::Status& s : {dir.status(), list.status(), size.status(),
                                channels.status(), attrs.status()}) {
    if (!s.ok()) return s;
  }
  if (dir->empty() == list->empty()) {
    return absl::InvalidArgumentError(
        "kernel.attr: give 'dir' (a directory of class subdirectories) or "
        "'list' (a file of \"path label\" lines), not both or neither");
  }
  if (*size < 1 || (*channels != 1 && *channels != 3)) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr: size >= 1 and channels 1 or 3, got size ",
                     *size, ", channels ", *channels));
  }
  auto files = dir->empty() ? ReadFileList(*list) : ListImageDirectory(*dir);
  if (!files.ok()) return files.status();
  if (files->empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr['", dir->empty() ? "list" : "dir",
        "']: ", dir->empty() ? *list : *dir, " holds no image files"));
  }
  files_ = std::move(*files);
  size_ = *size;
  channels_ = *channels;
  auto schedule =
      BatchSchedule::Make(static_cast<int64_t>(files_.size()), *attrs);
  if (!schedule.ok()) return schedule.status();
  schedule_ = *schedule;
  mean_ = static_cast<float>(attrs->mean);
  inv_std_ = 1.0f / static_cast<float>(attrs->std);
  const int64_t most = schedule_.most_rows();
  absl::Status status = ctx.SetOutputBlobs(
      "x",
      {BlobDesc{"x", DT_FLOAT32, {most, size_ * size_ * channels_}, true}});
  if (status.ok()) {
    status = ctx.SetOutputBlobs("y", {BlobDesc{"y", DT_INT32, {most}, true}});
  }
  return status;
}

absl::Status ImageBatchesKernel::DecodeRow(const FileEntry& file, float* to) {
  Bytes encoded;
  absl::Status status = ReadWholeFile(file.path, &encoded);
  Sample decoded, resized;
  if (status.ok()) {
    status = DecodeImage(absl::MakeConstSpan(encoded.data(), encoded.size()),
                         static_cast<int>(channels_), &decoded);
  }
  const Sample* image = &decoded;
  if (status.ok() && (decoded.shape[0] != size_ || decoded.shape[1] != size_)) {
    status = Resize(decoded.ref(), size_, size_, &resized);
    image = &resized;
  }
  if (!status.ok()) {
    return absl::Status(
        status.code(),
        absl::StrCat("image_batches: ", file.path, ": ", status.message()));
  }
  const uint8_t* pixels = image->storage.data();
  const int64_t n = size_ * size_ * channels_;
  for (int64_t i = 0; i < n; ++i) {
    to[i] = (static_cast<float>(pixels[i]) - mean_) * inv_std_;
  }
  return absl::OkStatus();
}

absl::Status ImageBatchesKernel::Forward(KernelContext* ctx) {
  TensorView x = ctx->output("x").blob(0);
  TensorView y = ctx->output("y").blob(0);
  const absl::Span<const int64_t> rows = schedule_.SamplesOf(ctx->piece_id());
  const int64_t count = static_cast<int64_t>(rows.size());
  const int64_t features = size_ * size_ * channels_;
  absl::Status status = x.set_shape({count, features});
  if (status.ok()) status = y.set_shape({count});
  if (!status.ok() || count == 0) return status;
  float* to = static_cast<float*>(x.mutable_raw_data());
  int32_t* labels = static_cast<int32_t*>(y.mutable_raw_data());
  for (int64_t r = 0; r < count; ++r) {
    const FileEntry& file = files_[rows[r]];
    status = DecodeRow(file, to + r * features);
    if (!status.ok()) return status;
    labels[r] = file.label;
  }
  return absl::OkStatus();
}

ACTORFLOW_REGISTER_KERNEL("image_batches", ImageBatchesKernel);

}  // namespace actorflow::internal::pipeline
