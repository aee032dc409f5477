#include "pipeline/sample_ops.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "pipeline/crop_outside.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "pipeline/sample_args.h"

namespace actorflow::internal::pipeline {
namespace {

// Samples of rank `rank` (and uint8 when `uint8_only`).
absl::Status ExpectRank(const char* op, const SampleSpec& in, size_t rank,
                        const char* what, bool uint8_only = false) {
  if (in.max_shape.size() == rank && (!uint8_only || in.type == DT_UINT8)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": takes ", what, ", got ", DataTypeName(in.type),
                   " samples of ", ShapeString(in.max_shape)));
}

// attr `name`: exactly two positive ints (height, width), or absent.
absl::StatusOr<std::vector<int64_t>> SizeAttr(const KernelInitContext& ctx,
                                              const char* name, bool required) {
  auto size = ctx.IntListAttr(name);
  if (!size.ok()) return size.status();
  if (size->empty() && !required) return size;
  if (size->size() != 2 || (*size)[0] < 1 || (*size)[1] < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr '", name, "': wants [height, width], both positive, got [",
        absl::StrJoin(*size, ", "), "]"));
  }
  return size;
}

// attrs `random` (default `random_default`) and `pos`: DALI's crop_pos_y
// and crop_pos_x, two floats in [0, 1] (CropPlace::anchored), only with
// `random` false.
absl::StatusOr<CropPlace> CropPlaceAttrs(const KernelInitContext& ctx,
                                         bool random_default) {
  auto random = ctx.BoolAttrOr("random", random_default);
  if (!random.ok()) return random.status();
  auto pos = ctx.FloatListAttr("pos");
  if (!pos.ok()) return pos.status();
  CropPlace place;
  place.random = *random;
  if (pos->empty()) return place;
  if (pos->size() != 2 || (*pos)[0] < 0 || (*pos)[0] > 1 || (*pos)[1] < 0 ||
      (*pos)[1] > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'pos': wants [y, x], each in [0, 1], got [",
                     absl::StrJoin(*pos, ", "), "]"));
  }
  if (place.random) {
    return absl::InvalidArgumentError(
        "attrs 'pos' and 'random': a window at 'pos' is not drawn; give "
        "'random' false with it");
  }
  place.anchored = true;
  place.y = static_cast<float>((*pos)[0]);
  place.x = static_cast<float>((*pos)[1]);
  return place;
}

// attr `max_pixels`: >= 0 (0: no limit), default kDefaultMaxPixels.
absl::StatusOr<int64_t> MaxPixels(const KernelInitContext& ctx) {
  auto max_pixels = ctx.IntAttrOr("max_pixels", kDefaultMaxPixels);
  if (max_pixels.ok() && *max_pixels < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr 'max_pixels': 0 (no limit) or more, got ", *max_pixels));
  }
  return max_pixels;
}

class DecodeOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto options = DecodeAttrs(ctx);
    if (!options.ok()) return options.status();
    options_ = *options;
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok =
        ExpectRank("decode", in, 1, "encoded files (uint8 [bytes])", true);
    if (!ok.ok()) return ok;
    return SampleSpec{DT_UINT8, {-1, -1, options_.channels}};
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    return DecodeImage(absl::MakeConstSpan(in.data, in.bytes), options_, out);
  }
  bool skippable() const override { return true; }

 private:
  DecodeOptions options_;
};

// The fused decoders. `decode_resize` (attrs color, max_pixels, and
// shorter or size as `resize` takes them) is decode then resize, with a
// JPEG decoded at the smallest DCT scale that still covers the target.
// `decode_random_crop` (attrs color, max_pixels, size [h, w], random b
// (true), and optionally resize_shorter or resize_size) is decode, [resize,]
// crop: its window is drawn exactly as `crop` draws it from the resized
// size (the same generator), and only the source rows and columns that
// window reads are decoded.
class DecodeCropOp final : public SampleOp {
 public:
  explicit DecodeCropOp(bool crop) : crop_(crop) {}

  absl::Status Init(const KernelInitContext& ctx) override {
    auto options = DecodeAttrs(ctx);
    if (!options.ok()) return options.status();
    options_ = *options;
    const char* size_name = crop_ ? "resize_size" : "size";
    const char* shorter_name = crop_ ? "resize_shorter" : "shorter";
    auto resize = SizeAttr(ctx, size_name, /*required=*/false);
    auto shorter = ctx.IntAttrOr(shorter_name, 0);
    if (!resize.ok()) return resize.status();
    if (!shorter.ok()) return shorter.status();
    if (!resize->empty() && *shorter > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attrs: give at most one of '", size_name, "' and '",
                       shorter_name, "'"));
    }
    if (!crop_ && resize->empty() && *shorter <= 0) {
      return absl::InvalidArgumentError(
          "attrs: give exactly one of 'size' ([height, width]) and "
          "'shorter' (the shorter side's length, > 0)");
    }
    auto antialias = ctx.BoolAttrOr("antialias", false);
    if (!antialias.ok()) return antialias.status();
    resize_ = *resize;
    shorter_ = *shorter;
    antialias_ = *antialias;
    if (crop_) {
      auto size = SizeAttr(ctx, "size", /*required=*/true);
      auto place = CropPlaceAttrs(ctx, /*random_default=*/true);
      if (!size.ok()) return size.status();
      if (!place.ok()) return place.status();
      crop_size_ = *size;
      place_ = *place;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectRank(crop_ ? "decode_random_crop" : "decode_resize",
                                 in, 1, "encoded files (uint8 [bytes])", true);
    if (!ok.ok()) return ok;
    const int64_t c = options_.channels;
    if (crop_) return SampleSpec{DT_UINT8, {crop_size_[0], crop_size_[1], c}};
    if (!resize_.empty())
      return SampleSpec{DT_UINT8, {resize_[0], resize_[1], c}};
    return SampleSpec{DT_UINT8, {-1, -1, c}};
  }

  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    DecodeCropSpec spec;
    spec.decode = options_;
    spec.shorter = shorter_;
    spec.antialias = antialias_;
    if (!resize_.empty()) {
      spec.resize_h = resize_[0];
      spec.resize_w = resize_[1];
    }
    if (crop_) {
      spec.crop_h = crop_size_[0];
      spec.crop_w = crop_size_[1];
      spec.place = place_;
    }
    return DecodeResizeCrop(absl::MakeConstSpan(in.data, in.bytes), spec, rng,
                            &decoded_, out, &skippable_);
  }
  bool skippable() const override { return skippable_; }

 private:
  const bool crop_;
  DecodeOptions options_;
  std::vector<int64_t> resize_;
  int64_t shorter_ = 0;
  bool antialias_ = false;
  std::vector<int64_t> crop_size_;
  CropPlace place_;
  Sample decoded_;
  bool skippable_ = true;  // of the last failure
};

// One of: size [height, width]; shorter (side); longer (side); resize_y /
// resize_x (either or both). mode and max_size as DALI's (RuleSize).
class ResizeOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto size = SizeAttr(ctx, "size", /*required=*/false);
    auto mode_name = ctx.StringAttrOr("mode", "");
    auto max_size = ctx.FloatListAttr("max_size");
    auto antialias = ctx.BoolAttrOr("antialias", false);
    auto interp = ctx.StringAttrOr("interp", "linear");
    absl::Status ok;
    for (const absl::Status& s :
         {size.status(), mode_name.status(), max_size.status(),
          antialias.status(), interp.status()}) {
      if (ok.ok()) ok = s;
    }
    if (ok.ok() && *interp != "linear" && *interp != "nn") {
      ok = absl::InvalidArgumentError(absl::StrCat(
          "attr 'interp': \"linear\" or \"nn\", got \"", *interp, "\""));
    }
    // The sides: each one value, or drawn per sample (ScalarArg).
    for (auto [name, arg] :
         {std::pair{"shorter", &shorter_}, std::pair{"longer", &longer_},
          std::pair{"resize_y", &y_}, std::pair{"resize_x", &x_}}) {
      if (ok.ok()) ok = arg->Init(ctx, name, 0);
      if (ok.ok() && (arg->varies() ? arg->low() <= 0 : arg->low() < 0)) {
        ok = absl::InvalidArgumentError(absl::StrCat(
            "attr '", name, "': a side's length must stay above 0 (",
            arg->varies() ? "drawn, its lowest is " : "given ", arg->low(),
            ")"));
      }
    }
    if (!ok.ok()) return ok;
    auto given = [](const ScalarArg& arg) {
      return arg.varies() || arg.high() > 0;
    };
    const int sides = !size->empty() + given(shorter_) + given(longer_) +
                      (given(y_) || given(x_));
    if (sides != 1) {
      return absl::InvalidArgumentError(
          "attrs: give exactly one of 'size' ([height, width]), 'shorter', "
          "'longer' (a side's length, > 0), or 'resize_y' and/or "
          "'resize_x' (> 0)");
    }
    auto mode = ParseResizeMode(mode_name->empty() ? "default" : *mode_name);
    if (!mode.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'mode': ", mode.status().message()));
    }
    if (!mode_name->empty() && (given(shorter_) || given(longer_))) {
      return absl::InvalidArgumentError(
          "attr 'mode': not with 'shorter' or 'longer', which keep the "
          "aspect ratio themselves");
    }
    if (max_size->size() > 2 ||
        std::any_of(max_size->begin(), max_size->end(),
                    [](double v) { return !(v >= 0); })) {
      return absl::InvalidArgumentError(
          "attr 'max_size': one limit for both sides or [height, width], "
          "none negative");
    }
    antialias_ = *antialias;
    nearest_ = *interp == "nn";
    varies_ =
        shorter_.varies() || longer_.varies() || y_.varies() || x_.varies();
    rule_ = ResizeRule{};
    rule_.mode = *mode;
    if (!size->empty()) {
      rule_.height = static_cast<double>((*size)[0]);
      rule_.width = static_cast<double>((*size)[1]);
    } else if (given(shorter_) || given(longer_)) {
      rule_.height = rule_.width = shorter_.high() + longer_.high();
      rule_.mode =
          given(shorter_) ? ResizeMode::kNotSmaller : ResizeMode::kNotLarger;
    } else {
      rule_.height = y_.high();
      rule_.width = x_.high();
    }
    if (!max_size->empty()) {
      rule_.max_height = max_size->front();
      rule_.max_width = max_size->back();
    }
    // Both sides asked for, each only limited: every sample the same size.
    fixed_ = !varies_ && rule_.height > 0 && rule_.width > 0 &&
             (rule_.mode == ResizeMode::kDefault ||
              rule_.mode == ResizeMode::kStretch);
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectRank("resize", in, 3, "HWC images");
    if (!ok.ok()) return ok;
    if (!fixed_) return SampleSpec{in.type, {-1, -1, in.max_shape[2]}};
    int64_t h = 0, w = 0;
    RuleSize(1, 1, rule_, &h, &w);
    return SampleSpec{in.type, {h, w, in.max_shape[2]}};
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    if (in.shape.size() != 3) return Resize(in, 1, 1, out);  // the error
    ResizeRule rule = rule_;
    if (varies_) {
      // A side given one value draws nothing (Draw gives it back).
      const double shorter = shorter_.Draw(rng), longer = longer_.Draw(rng);
      const double y = y_.Draw(rng), x = x_.Draw(rng);
      if (rule.mode == ResizeMode::kNotSmaller && shorter > 0) {
        rule.height = rule.width = shorter;
      } else if (rule.mode == ResizeMode::kNotLarger && longer > 0) {
        rule.height = rule.width = longer;
      } else {
        rule.height = y;
        rule.width = x;
      }
    }
    int64_t h = 0, w = 0;
    RuleSize(in.shape[0], in.shape[1], rule, &h, &w);
    if (nearest_) return ResizeNearest(in, h, w, out);
    return Resize(in, h, w, out, antialias_);
  }

 private:
  ScalarArg shorter_, longer_, y_, x_;
  ResizeRule rule_;
  bool varies_ = false;  // a side is drawn per sample
  bool fixed_ = false;
  bool antialias_ = false;
  bool nearest_ = false;  // attr interp "nn"
};

class CropOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto size = SizeAttr(ctx, "size", /*required=*/true);
    auto place = CropPlaceAttrs(ctx, /*random_default=*/false);
    auto policy = ctx.StringAttrOr("out_of_bounds", "error");
    auto fill = ctx.FloatListAttr("fill_values");
    if (!size.ok()) return size.status();
    if (!place.ok()) return place.status();
    if (!policy.ok()) return policy.status();
    if (!fill.ok()) return fill.status();
    if (*policy != "error" && *policy != "pad" && *policy != "trim_to_shape") {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'out_of_bounds': \"error\", \"pad\" or "
                       "\"trim_to_shape\", got \"",
                       *policy, "\""));
    }
    size_ = *size;
    place_ = *place;
    outside_ = *policy != "error";
    trim_ = *policy == "trim_to_shape";
    fill_.assign(fill->begin(), fill->end());
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectRank("crop", in, 3, "HWC images");
    if (!ok.ok()) return ok;
    SampleSpec out{in.type, {size_[0], size_[1], in.max_shape[2]}};
    for (int d = 0; trim_ && d < 2; ++d) {
      if (in.max_shape[d] >= 0) {
        out.max_shape[d] = std::min(out.max_shape[d], in.max_shape[d]);
      }
    }
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    if (in.shape.size() != 3) return Crop(in, {}, size_[0], size_[1], out);
    if (outside_) {
      int64_t y, x;
      PlaceCropAnywhere(in.shape[0], in.shape[1], size_[0], size_[1], place_,
                        rng, &y, &x);
      return CropOutside(in, y, x, size_[0], size_[1], fill_, trim_, out);
    }
    CropWindow window;
    absl::Status ok = PlaceCrop(in.shape[0], in.shape[1], size_[0], size_[1],
                                place_, rng, &window);
    if (!ok.ok()) return ok;
    return Crop(in, window, size_[0], size_[1], out);
  }
  bool PassesThrough(const SampleRef& in) const override {
    return in.shape.size() == 3 && in.shape[0] == size_[0] &&
           in.shape[1] == size_[1];
  }

 private:
  std::vector<int64_t> size_;
  CropPlace place_;
  // out_of_bounds "pad" or "trim_to_shape" (else a window that leaves the
  // image is the sample's error)
  bool outside_ = false, trim_ = false;
  std::vector<float> fill_;
};

// attr `name`: two floats lo <= hi, both above `floor`, or `fallback`.
absl::StatusOr<std::vector<double>> RangeAttr(const KernelInitContext& ctx,
                                              const char* name, float lo,
                                              float hi, float floor) {
  auto range = ctx.FloatListAttr(name);
  if (!range.ok()) return range.status();
  if (range->empty()) return std::vector<double>{lo, hi};
  if (range->size() != 2 || !((*range)[0] > floor) ||
      (*range)[0] > (*range)[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr '", name, "': wants [low, high], above ", floor,
        " and low <= high, got [", absl::StrJoin(*range, ", "), "]"));
  }
  return range;
}

// `random_resized_crop` (attrs random_area [lo, hi] (0.08, 1),
// random_aspect_ratio [lo, hi] (3/4, 4/3), num_attempts i (10), size
// [h, w] optional): the ImageNet crop (PlaceRandomAreaCrop), resized to
// `size` when given, else the window as it is.
class RandomResizedCropOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto size = SizeAttr(ctx, "size", /*required=*/false);
    auto area = RangeAttr(ctx, "random_area", 0.08f, 1.0f, 0.0f);
    auto ratio =
        RangeAttr(ctx, "random_aspect_ratio", 3.0f / 4.0f, 4.0f / 3.0f, 0.0f);
    auto attempts = ctx.IntAttrOr("num_attempts", 10);
    auto antialias = ctx.BoolAttrOr("antialias", false);
    for (const absl::Status& s : {size.status(), area.status(), ratio.status(),
                                  attempts.status(), antialias.status()}) {
      if (!s.ok()) return s;
    }
    if ((*area)[1] > 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attr 'random_area': fractions of the image's area, at most 1, "
          "got [",
          absl::StrJoin(*area, ", "), "]"));
    }
    if (*attempts < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'num_attempts': at least 1, got ", *attempts));
    }
    size_ = *size;
    area_ = *area;
    ratio_ = *ratio;
    attempts_ = *attempts;
    antialias_ = *antialias;
    return absl::OkStatus();
  }
  const std::vector<int64_t>& size() const { return size_; }
  bool antialias() const { return antialias_; }
  const std::vector<double>& area() const { return area_; }
  const std::vector<double>& ratio() const { return ratio_; }
  int64_t attempts() const { return attempts_; }

  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectRank("random_resized_crop", in, 3, "HWC images");
    if (!ok.ok()) return ok;
    if (size_.empty()) return SampleSpec{in.type, {-1, -1, in.max_shape[2]}};
    return SampleSpec{in.type, {size_[0], size_[1], in.max_shape[2]}};
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    if (in.shape.size() != 3) return Crop(in, {}, 1, 1, out);  // the error
    const CropBox box =
        PlaceRandomAreaCrop(in.shape[0], in.shape[1], area_[0], area_[1],
                            ratio_[0], ratio_[1], attempts_, rng);
    const CropWindow at{box.y, box.x};
    if (size_.empty()) return Crop(in, at, box.height, box.width, out);
    absl::Status ok = Crop(in, at, box.height, box.width, &window_);
    if (!ok.ok()) return ok;
    return Resize(window_.ref(), size_[0], size_[1], out, antialias_);
  }

 private:
  std::vector<int64_t> size_;
  std::vector<double> area_, ratio_;
  int64_t attempts_ = 10;
  bool antialias_ = false;
  Sample window_;
};

// `decode_random_resized_crop` (attrs color, max_pixels, and those of
// `random_resized_crop`): decode, random_resized_crop in one step that
// decodes only the window's rows and columns; exactly the unfused chain.
class DecodeAreaCropOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto options = DecodeAttrs(ctx);
    if (!options.ok()) return options.status();
    spec_.decode = *options;
    absl::Status ok = crop_.Init(ctx);
    if (!ok.ok()) return ok;
    if (!crop_.size().empty()) {
      spec_.crop_h = crop_.size()[0];
      spec_.crop_w = crop_.size()[1];
    }
    spec_.area_lo = crop_.area()[0];
    spec_.area_hi = crop_.area()[1];
    spec_.ratio_lo = crop_.ratio()[0];
    spec_.ratio_hi = crop_.ratio()[1];
    spec_.area_attempts = crop_.attempts();
    spec_.antialias = crop_.antialias();
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectRank("decode_random_resized_crop", in, 1,
                                 "encoded files (uint8 [bytes])", true);
    if (!ok.ok()) return ok;
    const int64_t c = spec_.decode.channels;
    if (spec_.crop_h > 0)
      return SampleSpec{DT_UINT8, {spec_.crop_h, spec_.crop_w, c}};
    return SampleSpec{DT_UINT8, {-1, -1, c}};
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    return DecodeResizeCrop(absl::MakeConstSpan(in.data, in.bytes), spec_, rng,
                            &decoded_, out, &skippable_);
  }
  bool skippable() const override { return skippable_; }

 private:
  DecodeCropSpec spec_;
  RandomResizedCropOp crop_;  // reads and checks the crop's attrs
  Sample decoded_;
  bool skippable_ = true;  // of the last failure
};

class FlipOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    return sides_.Init(ctx, 0.5, 0.0);
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectRank("flip", in, 3, "HWC images");
    if (!ok.ok()) return ok;
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    const auto [h, v] = sides_.Draw(rng);
    return Flip(in, h, v, out);
  }

 private:
  FlipSides sides_;
};

class CropMirrorNormalizeOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto crop = SizeAttr(ctx, "crop", /*required=*/false);
    auto pos = ctx.StringAttrOr("crop_pos", "center");
    auto mirror = Probability(ctx, "mirror", 0.0);
    auto mean = ctx.FloatListAttr("mean");
    auto stddev = ctx.FloatListAttr("std");
    for (const absl::Status& s : {crop.status(), pos.status(), mirror.status(),
                                  mean.status(), stddev.status()}) {
      if (!s.ok()) return s;
    }
    if (*pos != "center" && *pos != "random") {
      return absl::InvalidArgumentError(absl::StrCat(
          "attr 'crop_pos': \"center\" or \"random\", got \"", *pos, "\""));
    }
    crop_ = *crop;
    random_ = *pos == "random";
    mirror_ = *mirror;
    auto mirror_stream = ctx.IntAttrOr("mirror_stream", -1);
    if (!mirror_stream.ok()) return mirror_stream.status();
    mirror_stream_ = *mirror_stream;
    mean_.assign(mean->begin(), mean->end());
    std_.assign(stddev->begin(), stddev->end());
    if (mean_.empty()) mean_ = {0.0f};
    if (std_.empty()) std_ = {1.0f};
    auto pad = ctx.BoolAttrOr("pad_output", false);
    auto fill = ctx.FloatListAttr("fill_values");
    if (!pad.ok()) return pad.status();
    if (!fill.ok()) return fill.status();
    pad_output_ = *pad;
    fill_.assign(fill->begin(), fill->end());
    if (fill_.empty()) fill_ = {0.0f};
    for (float s : std_) {
      if (s == 0) return absl::InvalidArgumentError("attr 'std': has a zero");
    }
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok =
        ExpectRank("crop_mirror_normalize", in, 3, "uint8 HWC images", true);
    if (!ok.ok()) return ok;
    const int64_t c = in.max_shape[2];
    for (const auto* values : {&mean_, &std_}) {
      if (values->size() != 1 && static_cast<int64_t>(values->size()) != c) {
        return absl::InvalidArgumentError(absl::StrCat(
            "crop_mirror_normalize: attrs 'mean' and 'std' need 1 or ", c,
            " values for images of ", c, " channels, got ", values->size()));
      }
    }
    const int64_t out_c = c + static_cast<int64_t>(PadFor(c).size());
    if (crop_.empty()) {
      return SampleSpec{DT_FLOAT32, {out_c, in.max_shape[0], in.max_shape[1]}};
    }
    return SampleSpec{DT_FLOAT32, {out_c, crop_[0], crop_[1]}};
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    auto shape = OutputShape(in);
    if (!shape.ok()) return shape.status();
    out->Reshape(DT_FLOAT32, *shape);
    // A sample is read again soon (copied into its batch): cached stores.
    return Write(in, rng, out->as<float>(), /*stream=*/false);
  }
  bool finishes_in_batch() const override { return true; }
  absl::StatusOr<SampleShape> OutputShape(const SampleRef& in) const override {
    if (in.shape.size() != 3) {
      return CheckCropMirrorNormalize(in, {}, 0, 0, mean_, std_);
    }
    const auto [h, w] = CropSize(in);
    CropWindow window;
    absl::Status ok =
        PlaceCrop(in.shape[0], in.shape[1], h, w, {}, nullptr, &window);
    if (ok.ok()) ok = CheckCropMirrorNormalize(in, window, h, w, mean_, std_);
    if (!ok.ok()) return ok;
    return SampleShape{
        in.shape[2] + static_cast<int64_t>(PadFor(in.shape[2]).size()), h, w};
  }
  absl::Status ApplyInto(const SampleRef& in, SampleRng* rng,
                         uint8_t* to) override {
    // A batch's row, which nothing reads soon: streamed past the cache.
    return Write(in, rng, reinterpret_cast<float*>(to), /*stream=*/true);
  }

 private:
  absl::Status Write(const SampleRef& in, SampleRng* rng, float* to,
                     bool stream) {
    const bool mirror = UniformFor(rng, mirror_stream_) < mirror_;
    if (in.shape.size() != 3) {
      return CheckCropMirrorNormalize(in, {}, 0, 0, mean_, std_);
    }
    const auto [h, w] = CropSize(in);
    CropWindow window;
    absl::Status ok = PlaceCrop(in.shape[0], in.shape[1], h, w,
                                {.random = random_}, rng, &window);
    if (ok.ok()) ok = CheckCropMirrorNormalize(in, window, h, w, mean_, std_);
    if (!ok.ok()) return ok;
    CropMirrorNormalizeInto(in, window, h, w, mirror, mean_, std_, to,
                            PadFor(in.shape[2]), stream);
    return absl::OkStatus();
  }
  // The window's size: crop, else the whole image (rank-3 `in`).
  std::pair<int64_t, int64_t> CropSize(const SampleRef& in) const {
    return crop_.empty() ? std::make_pair(in.shape[0], in.shape[1])
                         : std::make_pair(crop_[0], crop_[1]);
  }

  std::vector<int64_t> crop_;
  bool random_ = false;
  double mirror_ = 0;
  int64_t mirror_stream_ = -1;  // a coin flip shared with other operators
  // pad_output: the channels up to the next power of two, each filled with
  // fill_values' value for it (one value: for all).
  std::vector<float> PadFor(int64_t channels) const {
    std::vector<float> pad;
    if (!pad_output_) return pad;
    int64_t padded = 1;
    while (padded < channels) padded *= 2;
    for (int64_t k = channels; k < padded; ++k) {
      pad.push_back(fill_.size() > static_cast<size_t>(k) ? fill_[k]
                                                          : fill_[0]);
    }
    return pad;
  }

  std::vector<float> mean_;
  std::vector<float> std_;
  bool pad_output_ = false;
  std::vector<float> fill_;
};

class CastOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto to = ctx.StringAttr("to");
    if (!to.ok()) return to.status();
    auto type = ParseDataType(*to);
    if (!type.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'to': ", type.status().message()));
    }
    auto round = ctx.BoolAttrOr("round", false);
    if (!round.ok()) return round.status();
    to_ = *type;
    round_ = *round;
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    return SampleSpec{to_, in.max_shape};
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    return CastSample(in, to_, out, round_);
  }

 private:
  DataType to_ = DT_FLOAT32;
  bool round_ = false;
};

// Passes each sample on unchanged after `ms` milliseconds: a slow stage on
// purpose, to rehearse what the stall report says about one.
class SleepOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto ms = NumberAttrOr(ctx, "ms", -1);
    if (!ms.ok()) return ms.status();
    if (!(*ms >= 0 && *ms <= 60000)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attr 'ms': milliseconds per sample, 0 to 60000, got ", *ms));
    }
    pause_ = absl::Milliseconds(*ms);
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    (void)rng;
    absl::SleepFor(pause_);
    out->Reshape(in.type, in.shape);
    std::copy(in.data, in.data + in.bytes, out->storage.data());
    return absl::OkStatus();
  }

 private:
  absl::Duration pause_;
};

}  // namespace

absl::StatusOr<SampleShape> SampleOp::OutputShape(const SampleRef&) const {
  return absl::UnimplementedError("this operator does not finish in a batch");
}

absl::Status SampleOp::ApplyInto(const SampleRef&, SampleRng*, uint8_t*) {
  return absl::UnimplementedError("this operator does not finish in a batch");
}

std::vector<std::string> SampleOpNames() {
  std::vector<std::string> names = {"cast",
                                    "crop",
                                    "crop_mirror_normalize",
                                    "decode",
                                    "decode_random_crop",
                                    "decode_random_resized_crop",
                                    "decode_resize",
                                    "flip",
                                    "random_resized_crop",
                                    "resize",
                                    "sleep"};
  for (const auto& [name, attrs] : AugmentOpAttrs()) names.push_back(name);
  std::sort(names.begin(), names.end());
  return names;
}

absl::StatusOr<std::unique_ptr<SampleOp>> MakeSampleOp(
    const std::string& name) {
  if (name == "decode") return std::make_unique<DecodeOp>();
  if (name == "decode_resize") return std::make_unique<DecodeCropOp>(false);
  if (name == "decode_random_crop") {
    return std::make_unique<DecodeCropOp>(true);
  }
  if (name == "decode_random_resized_crop") {
    return std::make_unique<DecodeAreaCropOp>();
  }
  if (name == "resize") return std::make_unique<ResizeOp>();
  if (name == "crop") return std::make_unique<CropOp>();
  if (name == "flip") return std::make_unique<FlipOp>();
  if (name == "random_resized_crop") {
    return std::make_unique<RandomResizedCropOp>();
  }
  if (name == "crop_mirror_normalize") {
    return std::make_unique<CropMirrorNormalizeOp>();
  }
  if (name == "cast") return std::make_unique<CastOp>();
  if (name == "sleep") return std::make_unique<SleepOp>();
  if (std::unique_ptr<SampleOp> op = MakeAugmentOp(name)) return op;
  return absl::NotFoundError(absl::StrCat("no sample operator '", name, "'"));
}

absl::StatusOr<DecodeOptions> DecodeAttrs(const KernelInitContext& ctx) {
  auto color = ctx.StringAttrOr("color", "rgb");
  if (!color.ok()) return color.status();
  if (*color != "rgb" && *color != "gray") {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr 'color': \"rgb\" or \"gray\", got \"", *color, "\""));
  }
  auto max_pixels = MaxPixels(ctx);
  if (!max_pixels.ok()) return max_pixels.status();
  auto adjust = ctx.BoolAttrOr("adjust_orientation", false);
  if (!adjust.ok()) return adjust.status();
  DecodeOptions options;
  options.channels = *color == "rgb" ? 3 : 1;
  options.max_pixels = *max_pixels;
  options.adjust_orientation = *adjust;
  return options;
}

}  // namespace actorflow::internal::pipeline
