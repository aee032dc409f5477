#include "pipeline/standardize.h"

#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace actorflow::internal::pipeline {
namespace {

// The sample's values as doubles, whatever its type.
absl::StatusOr<std::vector<double>> ValuesOf(const SampleRef& in) {
  const int64_t n = ShapeElemCnt(in.shape);
  std::vector<double> v(n);
  switch (in.type) {
    case DT_UINT8:
      for (int64_t i = 0; i < n; ++i) v[i] = in.data[i];
      return v;
    case DT_INT32:
      for (int64_t i = 0; i < n; ++i) v[i] = in.as<int32_t>()[i];
      return v;
    case DT_FLOAT32:
      for (int64_t i = 0; i < n; ++i) v[i] = in.as<float>()[i];
      return v;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("normalize: takes uint8, int32 or float32 samples, got ",
                       DataTypeName(in.type)));
  }
}

}  // namespace

absl::Status Standardize(const SampleRef& in, const StandardizeSpec& spec,
                         Sample* out) {
  auto values = ValuesOf(in);
  if (!values.ok()) return values.status();
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<bool> reduced(rank, spec.axes.empty());
  for (int64_t axis : spec.axes) {
    if (axis < 0 || axis >= rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("normalize: axis ", axis, " is not an axis of a sample ",
                       ShapeString(in.shape)));
    }
    reduced[axis] = true;
  }
  // Each element's statistics cell: its index with the reduced axes
  // dropped. stride[a] is axis a's step in the cells (0 if reduced).
  std::vector<int64_t> stride(rank, 0);
  int64_t cells = 1, group = 1;
  for (int64_t a = rank - 1; a >= 0; --a) {
    if (reduced[a]) {
      group *= in.shape[a];
    } else {
      stride[a] = cells;
      cells *= in.shape[a];
    }
  }
  const int64_t n = ShapeElemCnt(in.shape);
  // One cell (every axis reduced, the default) needs no map: all zeros.
  std::vector<int64_t> cell_of(cells == 1 ? 0 : n);
  if (cells > 1) {
    std::vector<int64_t> index(rank, 0);
    int64_t cell = 0;
    for (int64_t i = 0; i < n; ++i) {
      cell_of[i] = cell;
      for (int64_t a = rank - 1; a >= 0; --a) {  // the next index, odometer
        cell += stride[a];
        if (++index[a] < in.shape[a]) break;
        cell -= stride[a] * in.shape[a];
        index[a] = 0;
      }
    }
  }
  std::vector<double> mean(cells, spec.mean), inv(cells, 0);
  if (!spec.mean_given) {
    std::fill(mean.begin(), mean.end(), 0.0);
    for (int64_t i = 0; i < n; ++i)
      mean[cells == 1 ? 0 : cell_of[i]] += (*values)[i];
    for (double& m : mean) m /= static_cast<double>(group);
  }
  if (spec.stddev_given) {
    std::fill(inv.begin(), inv.end(),
              1 / std::sqrt(spec.stddev * spec.stddev + spec.epsilon));
  } else {
    if (group - spec.ddof <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("normalize: ddof ", spec.ddof, " leaves no degree of ",
                       "freedom in groups of ", group, " values"));
    }
    std::vector<double> var(cells, 0);
    for (int64_t i = 0; i < n; ++i) {
      const int64_t c = cells == 1 ? 0 : cell_of[i];
      const double d = (*values)[i] - mean[c];
      var[c] += d * d;
    }
    for (int64_t c = 0; c < cells; ++c) {
      const double v =
          var[c] / static_cast<double>(group - spec.ddof) + spec.epsilon;
      inv[c] = v > 0 ? 1 / std::sqrt(v) : 0;
    }
  }
  out->Reshape(DT_FLOAT32, in.shape);
  float* dst = out->as<float>();
  for (int64_t i = 0; i < n; ++i) {
    const int64_t c = cells == 1 ? 0 : cell_of[i];
    dst[i] = static_cast<float>(spec.scale * ((*values)[i] - mean[c]) * inv[c] +
                                spec.shift);
  }
  return absl::OkStatus();
}

namespace {

class StandardizeOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto axes = ctx.IntListAttr("axes");
    auto mean = ctx.FloatAttrOr("mean", NAN);
    auto stddev = ctx.FloatAttrOr("stddev", NAN);
    auto scale = ctx.FloatAttrOr("scale", 1);
    auto shift = ctx.FloatAttrOr("shift", 0);
    auto epsilon = ctx.FloatAttrOr("epsilon", 0);
    auto ddof = ctx.IntAttrOr("ddof", 0);
    for (const absl::Status& s :
         {axes.status(), mean.status(), stddev.status(), scale.status(),
          shift.status(), epsilon.status(), ddof.status()}) {
      if (!s.ok()) return s;
    }
    spec_ = StandardizeSpec{};
    spec_.axes = *axes;
    spec_.mean_given = !std::isnan(*mean);
    spec_.stddev_given = !std::isnan(*stddev);
    if (spec_.mean_given) spec_.mean = *mean;
    if (spec_.stddev_given) spec_.stddev = *stddev;
    spec_.scale = *scale;
    spec_.shift = *shift;
    spec_.epsilon = *epsilon;
    spec_.ddof = *ddof;
    if (spec_.stddev_given && !(spec_.stddev > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'stddev': above 0, got ", spec_.stddev));
    }
    if (!(spec_.epsilon >= 0) || spec_.ddof < 0) {
      return absl::InvalidArgumentError(
          "attrs 'epsilon' and 'ddof': none negative");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (in.type != DT_UINT8 && in.type != DT_INT32 && in.type != DT_FLOAT32) {
      return absl::InvalidArgumentError(
          absl::StrCat("normalize: takes uint8, int32 or float32 samples, got ",
                       DataTypeName(in.type)));
    }
    for (int64_t axis : spec_.axes) {
      if (axis < 0 || axis >= static_cast<int64_t>(in.max_shape.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("attr 'axes': ", axis, " is not an axis of samples ",
                         ShapeString(in.max_shape)));
      }
    }
    return SampleSpec{DT_FLOAT32, in.max_shape};
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    return Standardize(in, spec_, out);
  }

 private:
  StandardizeSpec spec_;
};

}  // namespace

std::unique_ptr<SampleOp> MakeStandardizeOp() {
  return std::make_unique<StandardizeOp>();
}

std::vector<std::string> StandardizeAttrs() {
  return {"axes", "mean", "stddev", "scale", "shift", "epsilon", "ddof"};
}

}  // namespace actorflow::internal::pipeline
