#include "pipeline/slice_at.h"

#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/convert.h"
#include "pipeline/image_codec.h"
#include "pipeline/sample_ops.h"

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

// `data`'s window at `begin` of `size`, row by row along the last
// dimension, into `out` (shaped already).
void CopyWindow(const SampleRef& data, const SampleShape& begin,
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
    for (int d = 0; d + 1 < rank; ++d) offset += (begin[d] + at[d]) * stride[d];
    std::memcpy(dst, data.data + offset * elem, row);
    for (int d = rank - 2; d >= 0; --d) {
      if (++at[d] < size[d]) break;
      at[d] = 0;
    }
  }
}

// The window attrs both operators read, and the window they give a
// sample of `extents`.
struct WindowSpec {
  std::vector<int64_t> axes;
  bool normalized_anchor = true, normalized_shape = true;

  absl::Status Init(const KernelInitContext& ctx) {
    auto given = ctx.IntListAttr("axes");
    auto anchor = ctx.BoolAttrOr("normalized_anchor", true);
    auto shape = ctx.BoolAttrOr("normalized_shape", true);
    for (const absl::Status& s :
         {given.status(), anchor.status(), shape.status()}) {
      if (!s.ok()) return s;
    }
    if (given->empty()) {
      return absl::InvalidArgumentError(
          "attr 'axes': the data's dimensions the window's entries are "
          "along, at least one");
    }
    axes = *given;
    normalized_anchor = *anchor;
    normalized_shape = *shape;
    return absl::OkStatus();
  }

  absl::Status CheckRank(size_t rank) const {
    for (int64_t axis : axes) {
      if (axis < 0 || axis >= static_cast<int64_t>(rank)) {
        return absl::InvalidArgumentError(
            absl::StrCat("attr 'axes': ", axis,
                         " is not a dimension of data of rank ", rank));
      }
    }
    return absl::OkStatus();
  }

  // Sets `begin` and `size` (the extents where no axis says otherwise).
  absl::Status Window(const SampleRef& anchor_in, const SampleRef& shape_in,
                      absl::Span<const int64_t> extents, SampleShape* begin,
                      SampleShape* size) const {
    auto anchor = Numbers(anchor_in, "anchor");
    auto shape = Numbers(shape_in, "shape");
    if (!anchor.ok()) return anchor.status();
    if (!shape.ok()) return shape.status();
    if (anchor->size() != axes.size() || shape->size() != axes.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice: ", axes.size(), " axes, but an anchor of ", anchor->size(),
          " and a shape of ", shape->size(), " values"));
    }
    const int rank = static_cast<int>(extents.size());
    begin->assign(rank, 0);
    size->assign(extents.begin(), extents.end());
    for (size_t j = 0; j < axes.size(); ++j) {
      const int64_t axis = axes[j];
      if (axis >= rank) {
        return absl::InvalidArgumentError(
            absl::StrCat("slice: axis ", axis, " of a sample of rank ", rank));
      }
      const double extent = static_cast<double>(extents[axis]);
      const double a = (*anchor)[j] * (normalized_anchor ? extent : 1.0);
      const double s = (*shape)[j] * (normalized_shape ? extent : 1.0);
      const int64_t lo = static_cast<int64_t>(std::round(a));
      const int64_t hi = static_cast<int64_t>(std::round(a + s));
      if (lo < 0 || hi > extents[axis] || hi < lo) {
        return absl::InvalidArgumentError(absl::StrCat(
            "slice: the window [", lo, ", ", hi, ") along axis ", axis,
            " is outside the sample's extent ", extents[axis], " (shape [",
            absl::StrJoin(extents, ", "), "])"));
      }
      (*begin)[axis] = lo;
      (*size)[axis] = hi - lo;
    }
    return absl::OkStatus();
  }
};

class SliceAtOp final : public MultiSampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    return window_.Init(ctx);
  }

  absl::StatusOr<std::vector<SampleSpec>> Infer(
      absl::Span<const SampleSpec> in) const override {
    if (in.size() != 3) {
      return absl::InvalidArgumentError(
          absl::StrCat("slice: takes data, an anchor and a shape, got ",
                       in.size(), " inputs"));
    }
    absl::Status ok = window_.CheckRank(in[0].max_shape.size());
    if (!ok.ok()) return ok;
    // A window is at most its data: the data's bound.
    return std::vector<SampleSpec>{in[0]};
  }

  absl::Status Apply(absl::Span<const SampleRef> in, SampleRng*,
                     absl::Span<Sample> out) const override {
    const SampleRef& data = in[0];
    SampleShape begin, size;
    absl::Status ok = window_.Window(in[1], in[2], data.shape, &begin, &size);
    if (!ok.ok()) return ok;
    out[0].Reshape(data.type, size);
    CopyWindow(data, begin, size, &out[0]);
    return absl::OkStatus();
  }

 private:
  WindowSpec window_;
};

class DecodeSliceOp final : public MultiSampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto options = DecodeAttrs(ctx);
    if (!options.ok()) return options.status();
    options_ = *options;
    return window_.Init(ctx);
  }

  absl::StatusOr<std::vector<SampleSpec>> Infer(
      absl::Span<const SampleSpec> in) const override {
    if (in.size() != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "decode_slice: takes encoded images, an anchor and a shape, got ",
          in.size(), " inputs"));
    }
    if (in[0].type != DT_UINT8 || in[0].max_shape.size() != 1) {
      return absl::InvalidArgumentError(
          "decode_slice: takes encoded files (uint8 [bytes])");
    }
    absl::Status ok = window_.CheckRank(3);
    if (!ok.ok()) return ok;
    return std::vector<SampleSpec>{
        SampleSpec{DT_UINT8, {-1, -1, options_.channels}}};
  }

  absl::Status Apply(absl::Span<const SampleRef> in, SampleRng*,
                     absl::Span<Sample> out) const override {
    const auto encoded = absl::MakeConstSpan(in[0].data, in[0].bytes);
    auto header = ReadImageHeader(encoded, options_.adjust_orientation);
    if (!header.ok()) return header.status();
    const int64_t extents[] = {header->upright_height(),
                               header->upright_width(), options_.channels};
    SampleShape begin, size;
    absl::Status ok = window_.Window(in[1], in[2], extents, &begin, &size);
    if (!ok.ok()) return ok;
    // Only the window's rows and columns are transformed (the decoder's
    // window; 0 would mean the whole extent), with a margin around it.
    DecodeOptions options = options_;
    if (size[0] > 0 && size[1] > 0) {
      options.y = begin[0];
      options.x = begin[1];
      options.h = size[0];
      options.w = size[1];
    }
    DecodedRegion region;
    ok = DecodeImage(encoded, options, &decoded_, &region);
    if (!ok.ok()) return ok;
    begin[0] -= region.y;
    begin[1] -= region.x;
    out[0].Reshape(DT_UINT8, size);
    CopyWindow(decoded_.ref(), begin, size, &out[0]);
    return absl::OkStatus();
  }

 private:
  DecodeOptions options_;
  WindowSpec window_;
  mutable Sample decoded_;  // scratch: a stage's samples, one at a time
};

}  // namespace

std::unique_ptr<MultiSampleOp> MakeSliceAtOp() {
  return std::make_unique<SliceAtOp>();
}

std::vector<std::string> SliceAtAttrs() {
  return {"axes", "normalized_anchor", "normalized_shape"};
}

std::unique_ptr<MultiSampleOp> MakeDecodeSliceOp() {
  return std::make_unique<DecodeSliceOp>();
}

std::vector<std::string> DecodeSliceAttrs() {
  return {"axes",  "normalized_anchor", "normalized_shape",
          "color", "max_pixels",        "adjust_orientation"};
}

}  // namespace actorflow::internal::pipeline
