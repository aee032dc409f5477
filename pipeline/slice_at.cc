#include "pipeline/slice_at.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/convert.h"

namespace actorflow::internal::pipeline {

namespace {

absl::StatusOr<std::vector<double>> Numbers(const SampleRef& in,
                                            const char* what) {
  std::vector<double> values(static_cast<size_t>(ShapeElemCnt(in.shape)));
  VisitDataType(in.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (size_t k = 0; k < values.size(); ++k) {
      values[k] = ConvertElement<double>(in.as<T>()[k]);
    }
  });
  for (double v : values) {
    if (!std::isfinite(v)) {
      return absl::InvalidArgumentError(
          absl::StrCat("slice: the ", what, " holds ", v));
    }
  }
  return values;
}

class SliceAtOp final : public MultiSampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto axes = ctx.IntListAttr("axes");
    auto anchor = ctx.BoolAttrOr("normalized_anchor", true);
    auto shape = ctx.BoolAttrOr("normalized_shape", true);
    for (const absl::Status& s :
         {axes.status(), anchor.status(), shape.status()}) {
      if (!s.ok()) return s;
    }
    if (axes->empty()) {
      return absl::InvalidArgumentError(
          "attr 'axes': the data's dimensions the window's entries are "
          "along, at least one");
    }
    axes_ = *axes;
    normalized_anchor_ = *anchor;
    normalized_shape_ = *shape;
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<SampleSpec>> Infer(
      absl::Span<const SampleSpec> in) const override {
    if (in.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("slice: takes data, an anchor and a shape, got ",
                       in.size(), " inputs"));
    }
    for (int64_t axis : axes_) {
      if (axis < 0 || axis >= static_cast<int64_t>(in[0].max_shape.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("attr 'axes': ", axis,
                         " is not a dimension of data "
                         "of rank ",
                         in[0].max_shape.size()));
      }
    }
    // A window is at most its data: the data's bound.
    return std::vector<SampleSpec>{in[0]};
  }

  absl::Status Apply(absl::Span<const SampleRef> in, SampleRng*,
                     absl::Span<Sample> out) const override {
    const SampleRef& data = in[0];
    auto anchor = Numbers(in[1], "anchor");
    auto shape = Numbers(in[2], "shape");
    if (!anchor.ok()) return anchor.status();
    if (!shape.ok()) return shape.status();
    if (anchor->size() != axes_.size() || shape->size() != axes_.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice: ", axes_.size(), " axes, but an anchor of ", anchor->size(),
          " and a shape of ", shape->size(), " values"));
    }
    const int rank = static_cast<int>(data.shape.size());
    SampleShape begin(rank, 0), size(data.shape.begin(), data.shape.end());
    for (size_t j = 0; j < axes_.size(); ++j) {
      const int64_t axis = axes_[j];
      if (axis >= rank) {
        return absl::InvalidArgumentError(
            absl::StrCat("slice: axis ", axis, " of a sample of rank ", rank));
      }
      const double extent = static_cast<double>(data.shape[axis]);
      const double a = (*anchor)[j] * (normalized_anchor_ ? extent : 1.0);
      const double s = (*shape)[j] * (normalized_shape_ ? extent : 1.0);
      const int64_t lo = static_cast<int64_t>(std::round(a));
      const int64_t hi = static_cast<int64_t>(std::round(a + s));
      if (lo < 0 || hi > data.shape[axis] || hi < lo) {
        return absl::InvalidArgumentError(absl::StrCat(
            "slice: the window [", lo, ", ", hi, ") along axis ", axis,
            " is outside the sample's extent ", data.shape[axis], " (shape [",
            absl::StrJoin(data.shape, ", "), "])"));
      }
      begin[axis] = lo;
      size[axis] = hi - lo;
    }
    out[0].Reshape(data.type, size);
    CopyWindow(data, begin, size, &out[0]);
    return absl::OkStatus();
  }

 private:
  // Row by row along the last dimension, in the output's order.
  static void CopyWindow(const SampleRef& data, const SampleShape& begin,
                         const SampleShape& size, Sample* out) {
    const int rank = static_cast<int>(size.size());
    const size_t elem = DataTypeSize(data.type);
    if (ShapeElemCnt(size) == 0) return;
    if (rank == 0) {
      std::memcpy(out->storage.data(), data.data, elem);
      return;
    }
    SampleShape stride(rank, 1);
    for (int d = rank - 2; d >= 0; --d) {
      stride[d] = stride[d + 1] * data.shape[d + 1];
    }
    const int64_t row = size[rank - 1] * static_cast<int64_t>(elem);
    const int64_t rows = ShapeElemCnt(size) / size[rank - 1];
    SampleShape at(rank - 1, 0);  // the row's index in the window
    uint8_t* dst = out->storage.data();
    for (int64_t r = 0; r < rows; ++r, dst += row) {
      int64_t offset = begin[rank - 1];
      for (int d = 0; d + 1 < rank; ++d)
        offset += (begin[d] + at[d]) * stride[d];
      std::memcpy(dst, data.data + offset * elem, row);
      for (int d = rank - 2; d >= 0; --d) {
        if (++at[d] < size[d]) break;
        at[d] = 0;
      }
    }
  }

  std::vector<int64_t> axes_;
  bool normalized_anchor_ = true, normalized_shape_ = true;
};

}  // namespace

std::unique_ptr<MultiSampleOp> MakeSliceAtOp() {
  return std::make_unique<SliceAtOp>();
}

std::vector<std::string> SliceAtAttrs() {
  return {"axes", "normalized_anchor", "normalized_shape"};
}

}  // namespace actorflow::internal::pipeline
