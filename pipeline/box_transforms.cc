#include "pipeline/box_transforms.h"

#include <cstring>

#include "pipeline/boxes.h"
#include "pipeline/sample_args.h"

namespace actorflow::internal::pipeline {

namespace {

absl::StatusOr<SampleSpec> ExpectBoxes(const char* op, const SampleSpec& in) {
  if (in.type != DT_FLOAT32 || in.max_shape.empty() ||
      (in.max_shape.back() != 4 && in.max_shape.back() >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": takes boxes, float32 [N, 4], got ",
                     DataTypeName(in.type), " of rank ", in.max_shape.size()));
  }
  return in;
}

class BbFlipOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto ltrb = ctx.BoolAttrOr("ltrb", false);
    if (!ltrb.ok()) return ltrb.status();
    ltrb_ = *ltrb;
    return sides_.Init(ctx, 1.0, 0.0);
  }

  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    return ExpectBoxes("bb_flip", in);
  }

  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    // As flip draws: a coin shared with flip or crop_mirror_normalize
    // gives both the same side.
    const auto [h, v] = sides_.Draw(rng);
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
  FlipSides sides_;
};

class BboxPasteOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto ltrb = ctx.BoolAttrOr("ltrb", false);
    if (!ltrb.ok()) return ltrb.status();
    ltrb_ = *ltrb;
    absl::Status ok = ratio_.Init(ctx, "ratio", 1);
    if (ok.ok()) ok = paste_x_.Init(ctx, "paste_x", 0.5);
    if (ok.ok()) ok = paste_y_.Init(ctx, "paste_y", 0.5);
    if (ok.ok() && ratio_.low() < 1) {
      ok = absl::InvalidArgumentError("attr 'ratio': at least 1");
    }
    return ok;
  }

  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    return ExpectBoxes("bbox_paste", in);
  }

  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    // Drawn in paste's order, so that unshared draws line up too.
    const float ratio = static_cast<float>(ratio_.Draw(rng));
    const float x = static_cast<float>(paste_x_.Draw(rng));
    const float y = static_cast<float>(paste_y_.Draw(rng));
    if (ratio < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("bbox_paste: ratio ", ratio, " is below 1"));
    }
    auto boxes = ReadBoxes(in, ltrb_, "bbox_paste");
    if (!boxes.ok()) return boxes.status();
    const float scale = 1.f / ratio;
    const float dx = x * (ratio - 1.f) / ratio, dy = y * (ratio - 1.f) / ratio;
    for (Box& b : *boxes) {
      b = Box{b.l * scale + dx, b.t * scale + dy, b.r * scale + dx,
              b.b * scale + dy};
    }
    WriteBoxes(*boxes, ltrb_, out);
    return absl::OkStatus();
  }

 private:
  bool ltrb_ = false;
  ScalarArg ratio_, paste_x_, paste_y_;
};

}  // namespace

std::unique_ptr<SampleOp> MakeBbFlipOp() {
  return std::make_unique<BbFlipOp>();
}

std::vector<std::string> BbFlipAttrs() {
  return {"ltrb", "horizontal", "vertical", "horizontal_stream",
          "vertical_stream"};
}

std::unique_ptr<SampleOp> MakeBboxPasteOp() {
  return std::make_unique<BboxPasteOp>();
}

std::vector<std::string> BboxPasteAttrs() {
  std::vector<std::string> attrs = {"ltrb"};
  for (const char* arg : {"ratio", "paste_x", "paste_y"}) {
    for (std::string& name : ScalarArg::AttrNames(arg)) {
      attrs.push_back(std::move(name));
    }
  }
  return attrs;
}

}  // namespace actorflow::internal::pipeline
