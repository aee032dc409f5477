// The per-sample operators of DALI's augmentations (pipeline/augment.h),
// with their attributes. Arguments that may differ per sample are
// ScalarArgs (pipeline/sample_args.h).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/augment.h"
#include "pipeline/box_transforms.h"
#include "pipeline/coord_transform.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "pipeline/math_op.h"
#include "pipeline/noise.h"
#include "pipeline/npy.h"
#include "pipeline/sample_args.h"
#include "pipeline/sample_ops.h"
#include "pipeline/standardize.h"
#include "pipeline/table_rows.h"

namespace actorflow::internal::pipeline {
namespace {

absl::Status ExpectImageSpec(const char* op, const SampleSpec& in) {
  if (in.max_shape.size() == 3 &&
      (in.type == DT_UINT8 || in.type == DT_FLOAT32)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      op, ": takes HWC images of uint8 or float32, got ", DataTypeName(in.type),
      " samples of ", ShapeString(in.max_shape)));
}

// Several ScalarArgs, read in one go; the first error wins.
absl::Status InitArgs(const KernelInitContext& ctx,
                      std::initializer_list<std::pair<ScalarArg*, double>> args,
                      std::initializer_list<const char*> names) {
  auto name = names.begin();
  for (const auto& [arg, fallback] : args) {
    absl::Status ok = arg->Init(ctx, *name++, fallback);
    if (!ok.ok()) return ok;
  }
  return absl::OkStatus();
}

std::vector<float> FloatsOf(const std::vector<double>& v) {
  return std::vector<float>(v.begin(), v.end());
}

// The value that contrast leaves alone: attr contrast_center, else half the
// type's range (128 for uint8, 0.5 for float32).
float CenterFor(double attr, DataType type) {
  if (!std::isnan(attr)) return static_cast<float>(attr);
  return type == DT_UINT8 ? 128.0f : 0.5f;
}

class BrightnessContrastOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto center = ctx.FloatAttrOr("contrast_center", NAN);
    if (!center.ok()) return center.status();
    center_ = *center;
    return InitArgs(ctx, {{&brightness_, 1}, {&shift_, 0}, {&contrast_, 1}},
                    {"brightness", "brightness_shift", "contrast"});
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec("brightness_contrast", in);
    if (!ok.ok()) return ok;
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    const float b = brightness_.Draw(rng), s = shift_.Draw(rng);
    const float c = contrast_.Draw(rng);
    return BrightnessContrast(in, b, s, c, CenterFor(center_, in.type), out);
  }

 private:
  ScalarArg brightness_, shift_, contrast_;
  double center_ = NAN;
};

// hsv, and color_twist (hsv then brightness and contrast).
class ColorOp final : public SampleOp {
 public:
  explicit ColorOp(bool twist) : twist_(twist) {}
  absl::Status Init(const KernelInitContext& ctx) override {
    auto center = ctx.FloatAttrOr("contrast_center", NAN);
    if (!center.ok()) return center.status();
    center_ = *center;
    absl::Status ok =
        InitArgs(ctx, {{&hue_, 0}, {&saturation_, 1}, {&value_, 1}},
                 {"hue", "saturation", "value"});
    if (!ok.ok() || !twist_) return ok;
    return InitArgs(ctx, {{&brightness_, 1}, {&contrast_, 1}},
                    {"brightness", "contrast"});
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec(twist_ ? "color_twist" : "hsv", in);
    if (ok.ok() && in.max_shape[2] != 3) {
      ok = absl::InvalidArgumentError("takes 3-channel (RGB) images");
    }
    if (!ok.ok()) return ok;
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    const float h = hue_.Draw(rng), s = saturation_.Draw(rng);
    const float v = value_.Draw(rng);
    if (!twist_) return ApplyColorMatrix(in, HsvMatrix(h, s, v), out);
    const float b = brightness_.Draw(rng), c = contrast_.Draw(rng);
    return ApplyColorMatrix(
        in, ColorTwistMatrix(h, s, v, b, c, CenterFor(center_, in.type)), out);
  }

 private:
  const bool twist_;
  ScalarArg hue_, saturation_, value_, brightness_, contrast_;
  double center_ = NAN;
};

class RotateOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto fill = ctx.FloatListAttr("fill_value");
    auto keep = ctx.BoolAttrOr("keep_size", false);
    auto size = ctx.IntListAttr("size");
    for (const absl::Status& s :
         {fill.status(), keep.status(), size.status()}) {
      if (!s.ok()) return s;
    }
    if (!size->empty() &&
        (size->size() != 2 || (*size)[0] < 1 || (*size)[1] < 1 || *keep)) {
      return absl::InvalidArgumentError(
          "attr 'size': [height, width], both positive, and not with "
          "keep_size");
    }
    fill_ = FloatsOf(*fill);
    keep_ = *keep;
    size_ = *size;
    return angle_.Init(ctx, "angle", 0);
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec("rotate", in);
    if (!ok.ok()) return ok;
    SampleSpec out = in;
    if (!size_.empty()) {
      out.max_shape = {size_[0], size_[1], in.max_shape[2]};
    } else if (!keep_ && in.bounded()) {
      const int64_t h = in.max_shape[0], w = in.max_shape[1];
      if (angle_.varies()) {
        // Any angle: the diagonal bounds both sides, plus one for the
        // parity RotatedSize may add.
        const int64_t d = static_cast<int64_t>(std::ceil(
                              std::sqrt(double(h) * h + double(w) * w))) +
                          1;
        out.max_shape = {d, d, in.max_shape[2]};
      } else {
        // A smaller sample's side may take a parity pixel the largest's
        // does not: one more.
        RotatedSize(h, w, angle_.Draw(nullptr), &out.max_shape[0],
                    &out.max_shape[1]);
        ++out.max_shape[0];
        ++out.max_shape[1];
      }
    } else if (!keep_) {
      out.max_shape = {-1, -1, in.max_shape[2]};
    }
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    const double angle = angle_.Draw(rng);
    if (in.shape.size() != 3) return Rotate(in, angle, 1, 1, fill_, out);
    int64_t h = in.shape[0], w = in.shape[1];
    if (!size_.empty()) {
      h = size_[0];
      w = size_[1];
    } else if (!keep_) {
      RotatedSize(in.shape[0], in.shape[1], angle, &h, &w);
    }
    return Rotate(in, angle, h, w, fill_, out);
  }

 private:
  ScalarArg angle_;
  std::vector<float> fill_;
  bool keep_ = false;
  std::vector<int64_t> size_;
};

class WarpAffineOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto matrix = ctx.FloatListAttr("matrix");
    auto fill = ctx.FloatListAttr("fill_value");
    auto size = ctx.IntListAttr("size");
    auto inverse = ctx.BoolAttrOr("inverse_map", true);
    for (const absl::Status& s :
         {matrix.status(), fill.status(), size.status(), inverse.status()}) {
      if (!s.ok()) return s;
    }
    if (matrix->size() != 6) {
      return absl::InvalidArgumentError(
          "attr 'matrix': 6 values, a 2 x 3 matrix row by row");
    }
    if (!size->empty() &&
        (size->size() != 2 || (*size)[0] < 1 || (*size)[1] < 1)) {
      return absl::InvalidArgumentError(
          "attr 'size': [height, width], both positive");
    }
    const std::vector<double>& m = *matrix;
    std::copy(m.begin(), m.end(), m_);
    if (!*inverse) {
      // The matrix maps input to output: invert it.
      const double det = m[0] * m[4] - m[1] * m[3];
      if (det == 0) {
        return absl::InvalidArgumentError("attr 'matrix': not invertible");
      }
      m_[0] = m[4] / det;
      m_[1] = -m[1] / det;
      m_[3] = -m[3] / det;
      m_[4] = m[0] / det;
      m_[2] = -(m_[0] * m[2] + m_[1] * m[5]);
      m_[5] = -(m_[3] * m[2] + m_[4] * m[5]);
    }
    fill_ = FloatsOf(*fill);
    size_ = *size;
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec("warp_affine", in);
    if (!ok.ok()) return ok;
    SampleSpec out = in;
    if (!size_.empty()) out.max_shape = {size_[0], size_[1], in.max_shape[2]};
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    const bool sized = !size_.empty();
    const int64_t h =
        sized ? size_[0] : (in.shape.size() == 3 ? in.shape[0] : 1);
    const int64_t w =
        sized ? size_[1] : (in.shape.size() == 3 ? in.shape[1] : 1);
    return WarpAffine(in, m_, h, w, fill_, out);
  }

 private:
  double m_[6] = {1, 0, 0, 0, 1, 0};
  std::vector<float> fill_;
  std::vector<int64_t> size_;
};

// Axis names "HW" or "WH": where height and width sit in a list of pairs.
absl::StatusOr<bool> HeightFirst(const KernelInitContext& ctx,
                                 const char* fallback) {
  auto axes = ctx.StringAttrOr("axis_names", fallback);
  if (!axes.ok()) return axes.status();
  if (*axes != "HW" && *axes != "WH") {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr 'axis_names': \"HW\" or \"WH\", got \"", *axes, "\""));
  }
  return *axes == "HW";
}

class EraseOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto anchor = ctx.FloatListAttr("anchor");
    auto shape = ctx.FloatListAttr("shape");
    auto fill = ctx.FloatListAttr("fill_value");
    auto norm_anchor = ctx.BoolAttrOr("normalized_anchor", false);
    auto norm_shape = ctx.BoolAttrOr("normalized_shape", false);
    auto hw = HeightFirst(ctx, "HW");
    for (const absl::Status& s :
         {anchor.status(), shape.status(), fill.status(), norm_anchor.status(),
          norm_shape.status(), hw.status()}) {
      if (!s.ok()) return s;
    }
    if (anchor->size() != shape->size() || anchor->size() % 2 != 0) {
      return absl::InvalidArgumentError(
          "attrs 'anchor' and 'shape': two values per region each, as many "
          "of both");
    }
    anchor_ = *anchor;
    shape_ = *shape;
    fill_ = FloatsOf(*fill);
    norm_anchor_ = *norm_anchor;
    norm_shape_ = *norm_shape;
    height_first_ = *hw;
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec("erase", in);
    if (!ok.ok()) return ok;
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    std::vector<Region> regions;
    const double h = in.shape.size() == 3 ? in.shape[0] : 1;
    const double w = in.shape.size() == 3 ? in.shape[1] : 1;
    for (size_t i = 0; i + 1 < anchor_.size(); i += 2) {
      const size_t y = height_first_ ? i : i + 1, x = height_first_ ? i + 1 : i;
      Region r;
      r.y = std::llround(anchor_[y] * (norm_anchor_ ? h : 1));
      r.x = std::llround(anchor_[x] * (norm_anchor_ ? w : 1));
      r.h = std::llround(shape_[y] * (norm_shape_ ? h : 1));
      r.w = std::llround(shape_[x] * (norm_shape_ ? w : 1));
      regions.push_back(r);
    }
    return Erase(in, regions, fill_, out);
  }

 private:
  std::vector<double> anchor_, shape_;
  std::vector<float> fill_;
  bool norm_anchor_ = false, norm_shape_ = false, height_first_ = true;
};

class PasteOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto fill = ctx.FloatListAttr("fill_value");
    if (!fill.ok()) return fill.status();
    fill_ = FloatsOf(*fill);
    absl::Status ok =
        InitArgs(ctx, {{&ratio_, 1}, {&paste_x_, 0.5}, {&paste_y_, 0.5}},
                 {"ratio", "paste_x", "paste_y"});
    if (ok.ok() && ratio_.low() < 1) {
      ok = absl::InvalidArgumentError("attr 'ratio': at least 1");
    }
    return ok;
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec("paste", in);
    if (!ok.ok()) return ok;
    SampleSpec out = in;
    for (int d = 0; d < 2; ++d) {
      if (in.max_shape[d] >= 0) {
        out.max_shape[d] =
            static_cast<int64_t>(std::ceil(in.max_shape[d] * ratio_.high()));
      }
    }
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    const double ratio = ratio_.Draw(rng);
    const double x = paste_x_.Draw(rng), y = paste_y_.Draw(rng);
    return Paste(in, ratio, y, x, fill_, out);
  }

 private:
  ScalarArg ratio_, paste_x_, paste_y_;
  std::vector<float> fill_;
};

// water and sphere, DALI's displacement filters: attr `linear` (false:
// the nearest pixel, DALI's default), fill_value, and a per-sample `mask`
// (0: the image passes unchanged). water takes its waves' ampl_x/_y,
// freq_x/_y and phase_x/_y.
class DisplaceOp final : public SampleOp {
 public:
  enum class Kind { kWater, kSphere, kJitter };
  explicit DisplaceOp(Kind kind) : kind_(kind) {}
  absl::Status Init(const KernelInitContext& ctx) override {
    auto linear = ctx.BoolAttrOr("linear", false);
    auto fill = ctx.FloatListAttr("fill_value");
    if (!linear.ok()) return linear.status();
    if (!fill.ok()) return fill.status();
    linear_ = *linear;
    fill_ = FloatsOf(*fill);
    absl::Status ok = mask_.Init(ctx, "mask", 1);
    if (ok.ok() && kind_ == Kind::kJitter) {
      auto degree = ctx.IntAttrOr("n_degree", 2);
      if (!degree.ok()) return degree.status();
      if (*degree < 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("attr 'n_degree': at least 1, got ", *degree));
      }
      n_degree_ = *degree;
    }
    if (!ok.ok() || kind_ != Kind::kWater) return ok;
    const Wave wave;
    for (auto [to, name, fallback] :
         {std::tuple{&x_.ampl, "ampl_x", wave.ampl},
          std::tuple{&y_.ampl, "ampl_y", wave.ampl},
          std::tuple{&x_.freq, "freq_x", wave.freq},
          std::tuple{&y_.freq, "freq_y", wave.freq},
          std::tuple{&x_.phase, "phase_x", wave.phase},
          std::tuple{&y_.phase, "phase_y", wave.phase}}) {
      auto value = ctx.FloatAttrOr(name, fallback);
      if (!value.ok()) return value.status();
      *to = static_cast<float>(*value);
    }
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec(kind_ == Kind::kWater    ? "water"
                                      : kind_ == Kind::kSphere ? "sphere"
                                                               : "jitter",
                                      in);
    if (!ok.ok()) return ok;
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    if (mask_.Draw(rng) == 0) {
      out->Reshape(in.type, in.shape);
      std::copy(in.data, in.data + in.bytes, out->storage.data());
      return absl::OkStatus();
    }
    switch (kind_) {
      case Kind::kWater:
        return Water(in, x_, y_, linear_, fill_, out);
      case Kind::kSphere:
        return Sphere(in, linear_, fill_, out);
      case Kind::kJitter:
        break;
    }
    return Jitter(in, n_degree_, rng, linear_, fill_, out);
  }

 private:
  Kind kind_;
  int64_t n_degree_ = 2;
  bool linear_ = false;
  std::vector<float> fill_;
  ScalarArg mask_;
  Wave x_, y_;
};

// jpeg_compression_distortion: `quality` per sample (95).
class JpegDistortionOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    return quality_.Init(ctx, "quality", 95);
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (in.type != DT_UINT8 || in.max_shape.size() != 3 ||
        in.max_shape[2] != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "jpeg_compression_distortion: takes RGB uint8 HWC images, got ",
          DataTypeName(in.type), " samples of ", ShapeString(in.max_shape)));
    }
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    return JpegCompressionDistortion(
        in, static_cast<int>(std::lround(quality_.Draw(rng))), out);
  }

 private:
  ScalarArg quality_;
};

// noise.gaussian, noise.salt_and_pepper and noise.shot (pipeline/noise.h):
// their parameters per sample; salt_val and pepper_val one value each.
class NoiseOp final : public SampleOp {
 public:
  enum class Kind { kGaussian, kSaltAndPepper, kShot };
  explicit NoiseOp(Kind kind) : kind_(kind) {}
  absl::Status Init(const KernelInitContext& ctx) override {
    switch (kind_) {
      case Kind::kGaussian:
        return InitArgs(ctx, {{&a_, 0}, {&b_, 1}}, {"mean", "stddev"});
      case Kind::kShot:
        return a_.Init(ctx, "factor", 20);
      case Kind::kSaltAndPepper:
        break;
    }
    auto salt = ctx.FloatAttrOr("salt_val", NAN);
    auto pepper = ctx.FloatAttrOr("pepper_val", NAN);
    auto per_channel = ctx.BoolAttrOr("per_channel", false);
    for (const absl::Status& s :
         {salt.status(), pepper.status(), per_channel.status()}) {
      if (!s.ok()) return s;
    }
    salt_ = *salt;
    pepper_ = *pepper;
    per_channel_ = *per_channel;
    return InitArgs(ctx, {{&a_, 0.05}, {&b_, 0.5}}, {"prob", "salt_vs_pepper"});
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (in.type != DT_UINT8 && in.type != DT_FLOAT32) {
      return absl::InvalidArgumentError(
          absl::StrCat("noise: takes uint8 or float32 samples, got ",
                       DataTypeName(in.type)));
    }
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    const double a = a_.Draw(rng), b = b_.Draw(rng);
    switch (kind_) {
      case Kind::kGaussian:
        return GaussianNoise(in, a, b, rng, out);
      case Kind::kShot:
        return ShotNoise(in, a, rng, out);
      case Kind::kSaltAndPepper:
        break;
    }
    const float salt =
        std::isnan(salt_) ? DefaultSalt(in.type) : static_cast<float>(salt_);
    const float pepper = std::isnan(pepper_) ? DefaultPepper(in.type)
                                             : static_cast<float>(pepper_);
    return SaltAndPepperNoise(in, a, b, salt, pepper, per_channel_, rng, out);
  }

 private:
  const Kind kind_;
  // gaussian: mean, stddev; salt_and_pepper: prob, salt_vs_pepper; shot:
  // factor (b_ unused: it draws nothing).
  ScalarArg a_, b_;
  double salt_ = NAN, pepper_ = NAN;
  bool per_channel_ = false;
};

class GaussianBlurOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto sigma = ctx.FloatListAttr("sigma");
    auto window = ctx.IntListAttr("window_size");
    if (!sigma.ok()) return sigma.status();
    if (!window.ok()) return window.status();
    if (sigma->size() > 2 || window->size() > 2 ||
        (sigma->empty() && window->empty())) {
      return absl::InvalidArgumentError(
          "attrs 'sigma' and 'window_size': one value, or [y, x]; at least "
          "one of them");
    }
    for (int d = 0; d < 2; ++d) {
      double s =
          sigma->empty() ? 0 : (*sigma)[std::min<size_t>(d, sigma->size() - 1)];
      int64_t w = window->empty()
                      ? 0
                      : (*window)[std::min<size_t>(d, window->size() - 1)];
      if (s < 0 || w < 0 || (w > 0 && w % 2 == 0)) {
        return absl::InvalidArgumentError(
            "attrs 'sigma' (>= 0) and 'window_size' (odd, > 0)");
      }
      // One from the other, as DALI (and OpenCV) derive them.
      if (w == 0) w = 2 * static_cast<int64_t>(std::ceil(3 * s)) + 1;
      if (s == 0) s = 0.3 * ((w - 1) * 0.5 - 1) + 0.8;
      sigma_[d] = s;
      window_[d] = w;
    }
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec("gaussian_blur", in);
    if (!ok.ok()) return ok;
    return in;
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    return GaussianBlur(in, sigma_[0], sigma_[1], window_[0], window_[1], out);
  }

 private:
  double sigma_[2] = {0, 0};
  int64_t window_[2] = {1, 1};
};

// slice: a window given by start and shape (absolute, or relative to the
// image with rel_start / rel_shape), in axis_names order ("WH" default).
class SliceOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto start = ctx.FloatListAttr("start");
    auto shape = ctx.FloatListAttr("shape");
    auto rel_start = ctx.FloatListAttr("rel_start");
    auto rel_shape = ctx.FloatListAttr("rel_shape");
    auto hw = HeightFirst(ctx, "WH");
    for (const absl::Status& s :
         {start.status(), shape.status(), rel_start.status(),
          rel_shape.status(), hw.status()}) {
      if (!s.ok()) return s;
    }
    if ((!start->empty() && !rel_start->empty()) ||
        (!shape->empty() && !rel_shape->empty()) ||
        (shape->empty() && rel_shape->empty())) {
      return absl::InvalidArgumentError(
          "attrs: give 'shape' or 'rel_shape', and at most one of 'start' "
          "and 'rel_start'");
    }
    auto pair = [&](const std::vector<double>& v, double fallback,
                    double out[2]) -> absl::Status {
      if (v.empty()) {
        out[0] = out[1] = fallback;
        return absl::OkStatus();
      }
      if (v.size() != 2) {
        return absl::InvalidArgumentError(
            "attrs 'start', 'shape', 'rel_start', 'rel_shape': two values "
            "each");
      }
      out[0] = *hw ? v[0] : v[1];  // height
      out[1] = *hw ? v[1] : v[0];  // width
      return absl::OkStatus();
    };
    relative_start_ = start->empty();
    relative_shape_ = shape->empty();
    absl::Status ok = pair(relative_start_ ? *rel_start : *start, 0, start_);
    if (ok.ok()) ok = pair(relative_shape_ ? *rel_shape : *shape, 0, shape_);
    return ok;
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec("slice", in);
    if (!ok.ok()) return ok;
    SampleSpec out = in;
    for (int d = 0; d < 2; ++d) {
      if (!relative_shape_) {
        out.max_shape[d] = std::llround(shape_[d]);
      } else if (in.max_shape[d] >= 0) {
        out.max_shape[d] =
            static_cast<int64_t>(std::ceil(in.max_shape[d] * shape_[d]));
      }
    }
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    if (in.shape.size() != 3) return Crop(in, {}, 1, 1, out);  // the error
    const double dims[2] = {double(in.shape[0]), double(in.shape[1])};
    int64_t at[2], size[2];
    for (int d = 0; d < 2; ++d) {
      at[d] = std::llround(start_[d] * (relative_start_ ? dims[d] : 1));
      size[d] = std::llround(shape_[d] * (relative_shape_ ? dims[d] : 1));
    }
    if (at[0] < 0 || at[1] < 0 || size[0] < 1 || size[1] < 1 ||
        at[0] + size[0] > in.shape[0] || at[1] + size[1] > in.shape[1]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "slice: ", size[0], "x", size[1], " at (", at[0], ", ", at[1],
          ") leaves the image of ", in.shape[0], "x", in.shape[1]));
    }
    return Crop(in, CropWindow{at[0], at[1]}, size[0], size[1], out);
  }

 private:
  double start_[2] = {0, 0}, shape_[2] = {1, 1};
  bool relative_start_ = true, relative_shape_ = true;
};

class TransposeOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto perm = ctx.IntListAttr("perm");
    if (!perm.ok()) return perm.status();
    if (perm->empty()) {
      return absl::InvalidArgumentError(
          "attr 'perm': the input axis of each output axis");
    }
    perm_ = *perm;
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (perm_.size() != in.max_shape.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("transpose: perm has ", perm_.size(),
                       " axes, the samples ", in.max_shape.size()));
    }
    SampleSpec out = in;
    for (size_t i = 0; i < perm_.size(); ++i) {
      if (perm_[i] < 0 || perm_[i] >= static_cast<int64_t>(perm_.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("transpose: perm [", absl::StrJoin(perm_, ", "),
                         "] is no permutation"));
      }
      out.max_shape[i] = in.max_shape[perm_[i]];
    }
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    return Transpose(in, perm_, out);
  }

 private:
  std::vector<int64_t> perm_;
};

// reshape: the same elements as `shape` (one entry may be -1: the rest).
class ReshapeOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto shape = ctx.IntListAttr("shape");
    if (!shape.ok()) return shape.status();
    int unknown = 0;
    for (int64_t d : *shape) {
      if (d < -1) unknown = 2;
      unknown += d == -1;
    }
    if (shape->empty() || unknown > 1) {
      return absl::InvalidArgumentError(
          "attr 'shape': the new shape, at most one -1");
    }
    shape_ = *shape;
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    SampleSpec out = in;
    out.max_shape = shape_;
    if (in.bounded()) {
      absl::StatusOr<SampleShape> resolved = Resolve(in.max_shape);
      if (!resolved.ok()) return resolved.status();
      out.max_shape.assign(resolved->begin(), resolved->end());
    }
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    absl::StatusOr<SampleShape> shape = Resolve(in.shape);
    if (!shape.ok()) return shape.status();
    out->Reshape(in.type, *shape);
    std::memcpy(out->storage.data(), in.data, in.bytes);
    return absl::OkStatus();
  }

 private:
  absl::StatusOr<SampleShape> Resolve(absl::Span<const int64_t> in) const {
    const int64_t n = ShapeElemCnt(in);
    int64_t known = 1;
    for (int64_t d : shape_) known *= d == -1 ? 1 : d;
    SampleShape out(shape_.begin(), shape_.end());
    for (int64_t& d : out) {
      if (d == -1) d = known > 0 ? n / known : 0;
    }
    if (ShapeElemCnt(out) != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "reshape: a sample of ", ShapeString(in), " has ", n,
          " elements, not the ", ShapeElemCnt(out), " of ", ShapeString(out)));
    }
    return out;
  }
  std::vector<int64_t> shape_;
};

// scale_shift: in * scale + shift as float32 (arithmetic with constants).
// scale_shift: attrs `scale` and `shift`, each one value per element of
// the samples' last axis (f-list), or one value for all, fixed or drawn
// per sample (a ScalarArg: `coin * images` in actorflow.dali).
class ScaleShiftOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    for (auto [list, arg, name, fallback] :
         {std::tuple{&scales_, &scale_, "scale", 1.0},
          std::tuple{&shifts_, &shift_, "shift", 0.0}}) {
      auto values = ctx.FloatListAttr(name);
      list->clear();
      if (values.ok() && !values->empty()) {
        list->assign(values->begin(), values->end());
        continue;
      }
      absl::Status ok = arg->Init(ctx, name, fallback);
      if (!ok.ok()) return ok;
    }
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    const int64_t last = in.max_shape.empty() ? 1 : in.max_shape.back();
    for (const auto* values : {&scales_, &shifts_}) {
      const int64_t size = static_cast<int64_t>(values->size());
      if (size > 1 && last >= 0 && size != last) {
        return absl::InvalidArgumentError(absl::StrCat(
            "scale_shift: attrs 'scale' and 'shift' need 1 value or ", last,
            " (the last axis of ", ShapeString(in.max_shape), "), got ", size));
      }
    }
    return SampleSpec{DT_FLOAT32, in.max_shape};
  }
  absl::Status Apply(const SampleRef& in, SampleRng* rng,
                     Sample* out) override {
    const std::vector<float> scale =
        scales_.empty()
            ? std::vector<float>{static_cast<float>(scale_.Draw(rng))}
            : scales_;
    const std::vector<float> shift =
        shifts_.empty()
            ? std::vector<float>{static_cast<float>(shift_.Draw(rng))}
            : shifts_;
    return ScaleShift(in, scale, shift, out);
  }

 private:
  std::vector<float> scales_, shifts_;  // given as lists
  ScalarArg scale_, shift_;             // else one value (per sample)
};

class OneHotOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto classes = ctx.IntAttrOr("num_classes", 0);
    auto on = ctx.FloatAttrOr("on_value", 1);
    auto off = ctx.FloatAttrOr("off_value", 0);
    for (const absl::Status& s :
         {classes.status(), on.status(), off.status()}) {
      if (!s.ok()) return s;
    }
    if (*classes < 1) {
      return absl::InvalidArgumentError(
          "attr 'num_classes': at least 1 (required)");
    }
    classes_ = *classes;
    on_ = static_cast<float>(*on);
    off_ = static_cast<float>(*off);
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (in.type != DT_INT32 && in.type != DT_INT64 && in.type != DT_UINT8) {
      return absl::InvalidArgumentError(absl::StrCat(
          "one_hot: takes integer samples, got ", DataTypeName(in.type)));
    }
    SampleSpec out{DT_FLOAT32, in.max_shape};
    out.max_shape.push_back(classes_);
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    return OneHot(in, classes_, on_, off_, out);
  }

 private:
  int64_t classes_ = 0;
  float on_ = 1, off_ = 0;
};

// DALI's fn.shapes: each sample's shape, int64 [rank].
class ShapesOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext&) override {
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    return SampleSpec{DT_INT64, {static_cast<int64_t>(in.max_shape.size())}};
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    const int64_t rank[] = {static_cast<int64_t>(in.shape.size())};
    out->Reshape(DT_INT64, rank);
    std::copy(in.shape.begin(), in.shape.end(), out->as<int64_t>());
    return absl::OkStatus();
  }
};

// DALI's fn.color_space_conversion: attrs `image_type` and `output_type`,
// each "rgb", "bgr" or "gray" (augment.h).
class ColorSpaceOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    for (auto [attr, space] :
         {std::pair{"image_type", &from_}, std::pair{"output_type", &to_}}) {
      auto name = ctx.StringAttr(attr);
      if (!name.ok()) return name.status();
      if (*name == "rgb") {
        *space = ColorSpace::kRgb;
      } else if (*name == "bgr") {
        *space = ColorSpace::kBgr;
      } else if (*name == "gray") {
        *space = ColorSpace::kGray;
      } else if (*name == "ycbcr") {
        *space = ColorSpace::kYCbCr;
      } else {
        return absl::InvalidArgumentError(absl::StrCat(
            "attr '", attr,
            "': \"rgb\", \"bgr\", \"gray\" or \"ycbcr\", got \"", *name, "\""));
      }
    }
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    absl::Status ok = ExpectImageSpec("color_space_conversion", in);
    if (ok.ok() && in.max_shape[2] >= 0 &&
        in.max_shape[2] != ChannelsOf(from_)) {
      ok = absl::InvalidArgumentError(
          absl::StrCat("the image type wants ", ChannelsOf(from_),
                       " channel(s), the input has ", in.max_shape[2]));
    }
    if (!ok.ok()) return ok;
    SampleSpec out = in;
    out.max_shape[2] = ChannelsOf(to_);
    return out;
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    return ConvertColorSpace(in, from_, to_, out);
  }

 private:
  ColorSpace from_ = ColorSpace::kRgb, to_ = ColorSpace::kRgb;
};

// DALI's fn.peek_image_shape: an encoded image's [height, width, channels]
// from its header, without decoding. attr `channels` (3): what the image
// decodes to (3 for RGB, 1 for gray), not what the file stores.
class PeekImageShapeOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto channels = ctx.IntAttrOr("channels", 3);
    if (!channels.ok()) return channels.status();
    if (*channels != 1 && *channels != 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attr 'channels': 1 (gray) or 3 (RGB), got ", *channels));
    }
    channels_ = *channels;
    auto adjust = ctx.BoolAttrOr("adjust_orientation", false);
    if (!adjust.ok()) return adjust.status();
    upright_ = *adjust;
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (in.type != DT_UINT8 || in.max_shape.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "takes encoded images (uint8 [bytes]), got ", DataTypeName(in.type),
          " of rank ", in.max_shape.size()));
    }
    return SampleSpec{DT_INT64, {3}};
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    auto header = ReadImageHeader(
        absl::MakeConstSpan(in.data, static_cast<size_t>(in.bytes)), upright_);
    if (!header.ok()) return header.status();
    const int64_t rank[] = {3};
    out->Reshape(DT_INT64, rank);
    int64_t* shape = out->as<int64_t>();
    shape[0] = header->upright_height();
    shape[1] = header->upright_width();
    shape[2] = channels_;
    return absl::OkStatus();
  }

 private:
  int64_t channels_ = 3;
  bool upright_ = false;  // the size shown upright (EXIF orientation)
};

struct AugmentOp {
  std::function<std::unique_ptr<SampleOp>()> make;
  std::vector<std::string> attrs;
};

std::vector<std::string> Join(std::vector<std::string> fixed,
                              std::initializer_list<const char*> per_sample) {
  for (const char* name : per_sample) {
    for (std::string& attr : ScalarArg::AttrNames(name)) {
      fixed.push_back(std::move(attr));
    }
  }
  return fixed;
}

const std::map<std::string, AugmentOp>& AugmentOps() {
  static const auto* ops = new std::map<std::string, AugmentOp>{
      {"brightness_contrast",
       {[] { return std::make_unique<BrightnessContrastOp>(); },
        Join({"contrast_center"},
             {"brightness", "brightness_shift", "contrast"})}},
      {"hsv",
       {[] { return std::make_unique<ColorOp>(false); },
        Join({}, {"hue", "saturation", "value"})}},
      {"color_twist",
       {[] { return std::make_unique<ColorOp>(true); },
        Join({"contrast_center"},
             {"hue", "saturation", "value", "brightness", "contrast"})}},
      {"rotate",
       {[] { return std::make_unique<RotateOp>(); },
        Join({"fill_value", "keep_size", "size"}, {"angle"})}},
      {"warp_affine",
       {[] { return std::make_unique<WarpAffineOp>(); },
        {"matrix", "size", "fill_value", "inverse_map"}}},
      {"erase",
       {[] { return std::make_unique<EraseOp>(); },
        {"anchor", "shape", "axis_names", "normalized_anchor",
         "normalized_shape", "fill_value"}}},
      {"paste",
       {[] { return std::make_unique<PasteOp>(); },
        Join({"fill_value"}, {"ratio", "paste_x", "paste_y"})}},
      {"gaussian_blur",
       {[] { return std::make_unique<GaussianBlurOp>(); },
        {"sigma", "window_size"}}},
      {"water",
       {[] { return std::make_unique<DisplaceOp>(DisplaceOp::Kind::kWater); },
        Join({"linear", "fill_value", "ampl_x", "ampl_y", "freq_x", "freq_y",
              "phase_x", "phase_y"},
             {"mask"})}},
      {"sphere",
       {[] { return std::make_unique<DisplaceOp>(DisplaceOp::Kind::kSphere); },
        Join({"linear", "fill_value"}, {"mask"})}},
      {"jitter",
       {[] { return std::make_unique<DisplaceOp>(DisplaceOp::Kind::kJitter); },
        Join({"linear", "fill_value", "n_degree"}, {"mask"})}},
      {"jpeg_compression_distortion",
       {[] { return std::make_unique<JpegDistortionOp>(); },
        Join({}, {"quality"})}},
      {"slice",
       {[] { return std::make_unique<SliceOp>(); },
        {"start", "shape", "rel_start", "rel_shape", "axis_names"}}},
      {"transpose", {[] { return std::make_unique<TransposeOp>(); }, {"perm"}}},
      {"reshape", {[] { return std::make_unique<ReshapeOp>(); }, {"shape"}}},
      {"scale_shift",
       {[] { return std::make_unique<ScaleShiftOp>(); },
        Join({}, {"scale", "shift"})}},
      {"one_hot",
       {[] { return std::make_unique<OneHotOp>(); },
        {"num_classes", "on_value", "off_value"}}},
      {"shapes", {[] { return std::make_unique<ShapesOp>(); }, {}}},
      {"color_space_conversion",
       {[] { return std::make_unique<ColorSpaceOp>(); },
        {"image_type", "output_type"}}},
      {"peek_image_shape",
       {[] { return std::make_unique<PeekImageShapeOp>(); },
        {"channels", "adjust_orientation"}}},
      {"gaussian_noise",
       {[] { return std::make_unique<NoiseOp>(NoiseOp::Kind::kGaussian); },
        Join({}, {"mean", "stddev"})}},
      {"salt_and_pepper_noise",
       {[] { return std::make_unique<NoiseOp>(NoiseOp::Kind::kSaltAndPepper); },
        Join({"salt_val", "pepper_val", "per_channel"},
             {"prob", "salt_vs_pepper"})}},
      {"standardize", {MakeStandardizeOp, StandardizeAttrs()}},
      {"math", {MakeMathOp, MathAttrs()}},
      {"coord_transform", {MakeCoordTransformOp, CoordTransformAttrs()}},
      {"npy_decode", {MakeNpyDecodeOp, NpyDecodeAttrs()}},
      {"table_rows", {MakeTableRowsOp, TableRowsAttrs()}},
      {"bb_flip", {MakeBbFlipOp, BbFlipAttrs()}},
      {"bbox_paste", {MakeBboxPasteOp, BboxPasteAttrs()}},
      {"shot_noise",
       {[] { return std::make_unique<NoiseOp>(NoiseOp::Kind::kShot); },
        Join({}, {"factor"})}},
  };
  return *ops;
}

}  // namespace

std::unique_ptr<SampleOp> MakeAugmentOp(const std::string& name) {
  auto it = AugmentOps().find(name);
  return it == AugmentOps().end() ? nullptr : it->second.make();
}

std::map<std::string, std::vector<std::string>> AugmentOpAttrs() {
  std::map<std::string, std::vector<std::string>> attrs;
  for (const auto& [name, op] : AugmentOps()) attrs[name] = op.attrs;
  return attrs;
}

}  // namespace actorflow::internal::pipeline
