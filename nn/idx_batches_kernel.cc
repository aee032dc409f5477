#include "nn/idx_batches_kernel.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "nn/dense_math.h"

namespace actorflow::internal::nn {

absl::Status IdxBatchesKernel::Init(const KernelInitContext& ctx) {
  if (!ctx.inputs().empty()) {
    return absl::InvalidArgumentError(
        "consumed_regst_desc_id: idx_batches is a source (it consumes "
        "nothing)");
  }
  auto images = ctx.StringAttr("images");
  auto labels = ctx.StringAttr("labels");
  auto attrs = pipeline::ReadBatchSourceAttrs(ctx);
  for (const absl::Status& s :
       {images.status(), labels.status(), attrs.status()}) {
    if (!s.ok()) return s;
  }
  auto image_dims = pipeline::ReadIdxHeader(*images);
  if (!image_dims.ok()) return image_dims.status();
  auto label_dims = pipeline::ReadIdxHeader(*labels);
  if (!label_dims.ok()) return label_dims.status();
  if (image_dims->empty() || label_dims->size() != 1 ||
      (*label_dims)[0] != (*image_dims)[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr['labels']: ", *labels, " holds ", label_dims->size(),
        "-dimensional labels for ", image_dims->empty() ? 0 : (*image_dims)[0],
        " images of ", *images, " (want one label per image)"));
  }
  images_path_ = *images;
  labels_path_ = *labels;
  features_ = 1;
  for (size_t d = 1; d < image_dims->size(); ++d) features_ *= (*image_dims)[d];
  auto schedule = pipeline::BatchSchedule::Make((*image_dims)[0], *attrs);
  if (!schedule.ok()) return schedule.status();
  schedule_ = *schedule;
  // The normalize kernel's arithmetic: float32 mean, float32 1 / std.
  mean_ = static_cast<float>(attrs->mean);
  inv_std_ = 1.0f / static_cast<float>(attrs->std);
  const int64_t most = schedule_.most_rows();
  absl::Status status = ctx.SetOutputBlobs(
      "x", {BlobDesc{"x", DT_FLOAT32, {most, features_}, true}});
  if (status.ok()) {
    status = ctx.SetOutputBlobs("y", {BlobDesc{"y", DT_INT32, {most}, true}});
  }
  return status;
}

absl::StatusOr<std::shared_ptr<const IdxBatchesKernel::Data>>
IdxBatchesKernel::Load(const std::string& images, const std::string& labels) {
  static Mutex mu;
  static auto* cache =
      new std::map<std::pair<std::string, std::string>, std::weak_ptr<Data>>();
  MutexLock lock(&mu);
  std::weak_ptr<Data>& slot = (*cache)[{images, labels}];
  if (std::shared_ptr<Data> data = slot.lock()) return data;
  auto read_images = pipeline::ReadIdx(images);
  if (!read_images.ok()) return read_images.status();
  auto read_labels = pipeline::ReadIdx(labels);
  if (!read_labels.ok()) return read_labels.status();
  auto data = std::make_shared<Data>();
  data->images = std::move(*read_images);
  data->labels = std::move(*read_labels);
  slot = data;
  return data;
}

absl::Status IdxBatchesKernel::Forward(KernelContext* ctx) {
  TensorView x = ctx->output("x").blob(0);
  TensorView y = ctx->output("y").blob(0);
  const absl::Span<const int64_t> rows = schedule_.SamplesOf(ctx->piece_id());
  const int64_t count = static_cast<int64_t>(rows.size());
  absl::Status status = x.set_shape({count, features_});
  if (status.ok()) status = y.set_shape({count});
  if (!status.ok() || count == 0) return status;
  if (data_ == nullptr) {
    auto data = Load(images_path_, labels_path_);
    if (!data.ok()) return data.status();
    data_ = *data;
    const int64_t samples = schedule_.samples();
    if (static_cast<int64_t>(data_->images.data.size()) < samples * features_ ||
        static_cast<int64_t>(data_->labels.data.size()) < samples) {
      return absl::DataLossError(absl::StrCat(
          images_path_, ": fewer samples than its header promised"));
    }
  }
  float* to = static_cast<float*>(x.mutable_raw_data());
  int32_t* labels = static_cast<int32_t*>(y.mutable_raw_data());
  // The rows are scattered over the whole set: ask for all their cache
  // lines first, so the misses overlap instead of coming one row at a time.
  const uint8_t* images = data_->images.data.data();
  for (int64_t r = 0; r < count; ++r) {
    const uint8_t* row = images + rows[r] * features_;
    for (int64_t at = 0; at < features_; at += 64) {
      __builtin_prefetch(row + at);
    }
  }
  for (int64_t r = 0; r < count; ++r) {
    const int64_t index = rows[r];
    const uint8_t* pixels = data_->images.data.data() + index * features_;
    NormalizeBytes(pixels, features_, mean_, inv_std_, to + r * features_);
    labels[r] = data_->labels.data[index];
  }
  return absl::OkStatus();
}

ACTORFLOW_REGISTER_KERNEL("idx_batches", IdxBatchesKernel);

}  // namespace actorflow::internal::nn
