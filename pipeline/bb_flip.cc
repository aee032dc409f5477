#include "pipeline/bb_flip.h"

#include <cstring>

#include "pipeline/boxes.h"
#include "pipeline/sample_args.h"

namespace actorflow::internal::pipeline {

namespace {

class BbFlipOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto ltrb = ctx.BoolAttrOr("ltrb", false);
    auto horizontal = Probability(ctx, "horizontal", 1.0);
    auto vertical = Probability(ctx, "vertical", 0.0);
    auto h_stream = ctx.IntAttrOr("horizontal_stream", -1);
    auto v_stream = ctx.IntAttrOr("vertical_stream", -1);
    for (const absl::Status& s :
         {ltrb.status(), horizontal.status(), vertical.status(),
          h_stream.status(), v_stream.status()}) {
      if (!s.ok()) return s;
    }
    ltrb_ = *ltrb;
    horizontal_ = *horizontal;
    vertical_ = *vertical;
    h_stream_ = *h_stream;
    v_stream_ = *v_stream;
    return absl::OkStatus();
  }

  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (in.type != DT_FLOAT32 || in.max_shape.empty() ||
        (in.max_shape.back() != 4 && in.max_shape.back() >= 0)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "bb_flip: takes boxes, float32 [N, 4], got ", DataTypeName(in.type),
          " of rank ", in.max_shape.size()));
    }
    return in;
  }

  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    // Both draws always happen, as flip's do, so that a coin shared with
    // flip or crop_mirror_normalize gives both the same side.
    const bool h = UniformFor(rng, h_stream_) < horizontal_;
    const bool v = UniformFor(rng, v_stream_) < vertical_;
    auto boxes = ReadBoxes(in, ltrb_, "bb_flip");
    if (!boxes.ok()) return boxes.status();
    out->Reshape(in.type, in.shape);
    std::memcpy(out->storage.data(), in.data, in.bytes);
    float* row = out->as<float>();
    for (size_t i = 0; i < boxes->size(); ++i, row += 4) {
      if (h) Mirror(row, 0);
      if (v) Mirror(row, 1);
    }
    return absl::OkStatus();
  }

 private:
  // Coordinate `axis` (0: x, 1: y) of one row mirrored about the middle.
  void Mirror(float* row, int axis) const {
    if (ltrb_) {
      const float low = row[axis];
      row[axis] = 1.f - row[axis + 2];
      row[axis + 2] = 1.f - low;
    } else {
      row[axis] = 1.f - row[axis] - row[axis + 2];
    }
  }

  bool ltrb_ = false;
  double horizontal_ = 1, vertical_ = 0;
  int64_t h_stream_ = -1, v_stream_ = -1;
};

}  // namespace

std::unique_ptr<SampleOp> MakeBbFlipOp() {
  return std::make_unique<BbFlipOp>();
}

std::vector<std::string> BbFlipAttrs() {
  return {"ltrb", "horizontal", "vertical", "horizontal_stream",
          "vertical_stream"};
}

}  // namespace actorflow::internal::pipeline
