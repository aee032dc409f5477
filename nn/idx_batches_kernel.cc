#include "nn/idx_batches_kernel.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "nn/dense_math.h"
#include "thread/mutex.h"

namespace actorflow::nn {

absl::Status IdxBatchesKernel::Init(const KernelInitContext& ctx) {
  if (!ctx.inputs().empty()) {
    return absl::InvalidArgumentError(
        "consumed_regst_desc_id: idx_batches is a source (it consumes "
        "nothing)");
  }
  auto images = ctx.StringAttr("images");
  auto labels = ctx.StringAttr("labels");
  auto batch = ctx.IntAttr("batch");
  auto limit = ctx.IntAttrOr("limit", 0);
  auto window = ctx.IntAttrOr("shuffle_window", 0);
  auto seed = ctx.IntAttrOr("seed", 0);
  auto mean = ctx.FloatAttrOr("mean", 0.0);
  auto stddev = ctx.FloatAttrOr("std", 1.0);
  auto period = ctx.IntAttrOr("period", 0);
  auto offset = ctx.IntAttrOr("offset", 0);
  for (const absl::Status& s :
       {images.status(), labels.status(), batch.status(), limit.status(),
        window.status(), seed.status(), mean.status(), stddev.status(),
        period.status(), offset.status()}) {
    if (!s.ok()) return s;
  }
  if (*batch < 1 || *limit < 0 || *period < 0 || *offset < 0 || *stddev == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr: batch >= 1, limit >= 0, period >= 0, offset >= 0 and "
        "std != 0, got batch ",
        *batch, ", limit ", *limit, ", period ", *period, ", offset ", *offset,
        ", std ", *stddev));
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
  batch_ = *batch;
  samples_ = (*image_dims)[0];
  if (*limit > 0) samples_ = std::min(samples_, *limit);
  features_ = 1;
  for (size_t d = 1; d < image_dims->size(); ++d) features_ *= (*image_dims)[d];
  batches_ = (samples_ + batch_ - 1) / batch_;
  shuffle_window_ = *window;
  seed_ = static_cast<uint64_t>(*seed);
  period_ = *period > 0 ? *period : batches_;
  offset_ = *offset;
  if (offset_ + batches_ > period_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr['period']: ", batches_, " batches at offset ", offset_,
        " do not fit in a period of ", period_, " pieces"));
  }
  // The normalize kernel's arithmetic: float32 mean, float32 1 / std.
  mean_ = static_cast<float>(*mean);
  inv_std_ = 1.0f / static_cast<float>(*stddev);
  absl::Status status = ctx.SetOutputBlobs(
      "x", {BlobDesc{"x", DT_FLOAT32, {batch_, features_}, true}});
  if (status.ok()) {
    status = ctx.SetOutputBlobs("y", {BlobDesc{"y", DT_INT32, {batch_}, true}});
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
  const int64_t p = ctx->piece_id();
  const int64_t epoch = p / period_;
  const int64_t q = p % period_ - offset_;
  const bool mine = q >= 0 && q < batches_;
  const int64_t rows = mine ? std::min(batch_, samples_ - q * batch_) : 0;
  absl::Status status = x.set_shape({rows, features_});
  if (status.ok()) status = y.set_shape({rows});
  if (!status.ok() || rows == 0) return status;
  if (data_ == nullptr) {
    auto data = Load(images_path_, labels_path_);
    if (!data.ok()) return data.status();
    data_ = *data;
    if (static_cast<int64_t>(data_->images.data.size()) <
            samples_ * features_ ||
        static_cast<int64_t>(data_->labels.data.size()) < samples_) {
      return absl::DataLossError(absl::StrCat(
          images_path_, ": fewer samples than its header promised"));
    }
  }
  if (order_epoch_ != epoch) {
    order_ = pipeline::EpochOrder(samples_, shuffle_window_, seed_, epoch);
    order_epoch_ = epoch;
  }
  float* to = static_cast<float*>(x.mutable_raw_data());
  int32_t* labels = static_cast<int32_t*>(y.mutable_raw_data());
  // The rows are scattered over the whole set: ask for all their cache
  // lines first, so the misses overlap instead of coming one row at a time.
  const uint8_t* images = data_->images.data.data();
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = images + order_[q * batch_ + r] * features_;
    for (int64_t at = 0; at < features_; at += 64) {
      __builtin_prefetch(row + at);
    }
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t index = order_[q * batch_ + r];
    const uint8_t* pixels = data_->images.data.data() + index * features_;
    NormalizeBytes(pixels, features_, mean_, inv_std_, to + r * features_);
    labels[r] = data_->labels.data[index];
  }
  return absl::OkStatus();
}

REGISTER_KERNEL("idx_batches", IdxBatchesKernel);

}  // namespace actorflow::nn
