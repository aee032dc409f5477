#include "pipeline/batch_schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "pipeline/dataset.h"

namespace actorflow::internal::pipeline {

absl::StatusOr<BatchSourceAttrs> ReadBatchSourceAttrs(
    const KernelInitContext& ctx) {
  auto batch = ctx.IntAttr("batch");
  auto limit = ctx.IntAttrOr("limit", 0);
  auto window = ctx.IntAttrOr("shuffle_window", 0);
  auto seed = ctx.IntAttrOr("seed", 0);
  auto mean = ctx.FloatAttrOr("mean", 0.0);
  auto stddev = ctx.FloatAttrOr("std", 1.0);
  auto period = ctx.IntAttrOr("period", 0);
  auto offset = ctx.IntAttrOr("offset", 0);
  auto part = ParallelPartOf(ctx);
  for (const absl::Status& s :
       {batch.status(), limit.status(), window.status(), seed.status(),
        mean.status(), stddev.status(), period.status(), offset.status(),
        part.status()}) {
    if (!s.ok()) return s;
  }
  if (*batch < 1 || *limit < 0 || *period < 0 || *offset < 0 || *stddev == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr: batch >= 1, limit >= 0, period >= 0, offset >= 0 and "
        "std != 0, got batch ",
        *batch, ", limit ", *limit, ", period ", *period, ", offset ", *offset,
        ", std ", *stddev));
  }
  return BatchSourceAttrs{*batch,  *limit, *window, *seed, *period,
                          *offset, *mean,  *stddev, *part};
}

absl::StatusOr<BatchSchedule> BatchSchedule::Make(
    int64_t total, const BatchSourceAttrs& attrs) {
  if (attrs.part.num > 1 && attrs.part.axis != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['parallel_axis']: a batch source splits "
                     "its rows (split(0)), not axis ",
                     attrs.part.axis));
  }
  BatchSchedule s;
  s.samples_ = attrs.limit > 0 ? std::min(total, attrs.limit) : total;
  s.batch_ = attrs.batch;
  s.batches_ = (s.samples_ + s.batch_ - 1) / s.batch_;
  s.period_ = attrs.period > 0 ? attrs.period : s.batches_;
  s.offset_ = attrs.offset;
  s.shuffle_window_ = attrs.shuffle_window;
  s.seed_ = static_cast<uint64_t>(attrs.seed);
  s.part_ = attrs.part;
  if (s.offset_ + s.batches_ > s.period_) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr['period']: ", s.batches_, " batches at offset ", s.offset_,
        " do not fit in a period of ", s.period_, " pieces"));
  }
  return s;
}

absl::Span<const int64_t> BatchSchedule::SamplesOf(int64_t piece) {
  const int64_t q = piece % period_ - offset_;
  const bool mine = q >= 0 && q < batches_;
  const Range part =
      part_.Rows(mine ? std::min(batch_, samples_ - q * batch_) : 0);
  if (part.size() == 0) return {};
  const int64_t epoch = piece / period_;
  if (order_epoch_ != epoch) {
    order_ = EpochOrder(samples_, shuffle_window_, seed_, epoch);
    order_epoch_ = epoch;
  }
  return absl::MakeConstSpan(order_).subspan(q * batch_ + part.begin,
                                             part.size());
}

}  // namespace actorflow::internal::pipeline
