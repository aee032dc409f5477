#include "pipeline/image_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/convert.h"
#include "pipeline/normalize_rows.h"
#include "pipeline/pixel_store.h"
#include "pipeline/resample.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace actorflow::internal::pipeline {
namespace {

absl::Status ExpectImage(const char* op, const SampleRef& in) {
  if (in.shape.size() == 3 && in.shape[0] > 0 && in.shape[1] > 0 &&
      in.shape[2] > 0) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      op, ": wants an HWC image, got shape ", ShapeString(in.shape)));
}

absl::Status ExpectType(const char* op, const SampleRef& in,
                        std::initializer_list<DataType> types) {
  for (DataType type : types) {
    if (in.type == type) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": does not take ", DataTypeName(in.type), " samples"));
}

// One output coordinate's two source taps and the weight of the second.
struct Tap {
  int64_t lo = 0;
  int64_t hi = 0;
  float frac = 0;
};

// The taps of outputs [first, first + count) of a resize from in_size to
// out_size, relative to `origin` (the first source index held).
std::vector<Tap> Taps(int64_t in_size, int64_t out_size, int64_t first,
                      int64_t count, int64_t origin) {
  std::vector<Tap> taps(count);
  const double scale = static_cast<double>(in_size) / out_size;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t o = first + i;
    double src = (o + 0.5) * scale - 0.5;
    src = std::max(0.0, std::min(src, static_cast<double>(in_size - 1)));
    Tap& tap = taps[i];
    tap.lo = static_cast<int64_t>(src);
    tap.hi = std::min(tap.lo + 1, in_size - 1);
    tap.frac = static_cast<float>(src - tap.lo);
    tap.lo -= origin;
    tap.hi -= origin;
  }
  return taps;
}

// One source row interpolated along the width: out[x * c + k] is the value
// between the row's two taps of output column x. C > 0: the channel count
// known at compile time (the common 1 and 3), else `channels`.
template <typename T, int C>
void HorizontalPass(const T* __restrict row, const std::vector<Tap>& xs,
                    int64_t channels, int64_t first, float* __restrict out) {
  const int64_t c = C > 0 ? C : channels;
  const int64_t n = static_cast<int64_t>(xs.size());
  for (int64_t x = first; x < n; ++x) {
    const Tap& tap = xs[x];
    const T* a = row + tap.lo * c;
    const T* b = row + tap.hi * c;
    for (int64_t k = 0; k < c; ++k) {
      const float left = static_cast<float>(a[k]);
      out[x * c + k] = left + (static_cast<float>(b[k]) - left) * tap.frac;
    }
  }
}

#if defined(__SSE2__)
// Four bytes from p as four floats.
inline __m128 LoadBytes4(const uint8_t* p) {
  int32_t bytes;
  std::memcpy(&bytes, p, sizeof(bytes));
  const __m128i zero = _mm_setzero_si128();
  __m128i wide = _mm_unpacklo_epi8(_mm_cvtsi32_si128(bytes), zero);
  return _mm_cvtepi32_ps(_mm_unpacklo_epi16(wide, zero));
}
#endif

// HorizontalPass for RGB bytes, a pixel per vector: the same float
// operations in the same order, so the same values. Each vector reads and
// writes one value past its pixel: the caller leaves one float of room
// after `out`, and only columns whose taps lie before the row's last
// pixel (`in_w` wide) take this path.
void HorizontalPassRgb(const uint8_t* __restrict row,
                       const std::vector<Tap>& xs, int64_t in_w,
                       float* __restrict out) {
  int64_t x = 0;
#if defined(__SSE2__)
  const int64_t n = static_cast<int64_t>(xs.size());
  for (; x < n && xs[x].hi + 1 < in_w; ++x) {
    const __m128 left = LoadBytes4(row + xs[x].lo * 3);
    const __m128 right = LoadBytes4(row + xs[x].hi * 3);
    const __m128 frac = _mm_set1_ps(xs[x].frac);
    _mm_storeu_ps(out + x * 3,
                  _mm_add_ps(left, _mm_mul_ps(_mm_sub_ps(right, left), frac)));
  }
#endif
  HorizontalPass<uint8_t, 3>(row, xs, 3, x, out);
}

template <typename T>
void VerticalPass(const float* __restrict upper, const float* __restrict lower,
                  float fy, int64_t n, T* __restrict out) {
  int64_t i = 0;
  if constexpr (std::is_same_v<T, uint8_t>) {
#if defined(__SSE2__)
    const __m128 f = _mm_set1_ps(fy);
    auto lane = [&](int64_t at) {
      const __m128 u = _mm_loadu_ps(upper + at);
      return _mm_add_ps(u,
                        _mm_mul_ps(_mm_sub_ps(_mm_loadu_ps(lower + at), u), f));
    };
    const ByteStore8 store;
    for (; i + 8 <= n; i += 8) store(lane(i), lane(i + 4), out + i);
#endif
    for (; i < n; ++i) {
      out[i] = StorePixel<uint8_t>(upper[i] + (lower[i] - upper[i]) * fy);
    }
  } else {
    for (; i < n; ++i) out[i] = upper[i] + (lower[i] - upper[i]) * fy;
  }
}

// in: rows [area.y, ...) and columns [area.x, ...) of a source of
// area.full_h x area.full_w; out: the window of the resize of that source
// to height x width. Separable: each source row the window reads is
// interpolated along the width once, then pairs of those rows along the
// height (the same arithmetic as per pixel, in the same order).
template <typename T>
void ResizeImpl(const SampleRef& in, const ResizeArea& area, int64_t height,
                int64_t width, const CropWindow& window, int64_t out_h,
                int64_t out_w, Sample* out) {
  const int64_t in_w = in.shape[1];
  const int64_t c = in.shape[2];
  const std::vector<Tap> ys =
      Taps(area.full_h, height, window.y, out_h, area.y);
  const std::vector<Tap> xs = Taps(area.full_w, width, window.x, out_w, area.x);
  const T* src = in.as<T>();
  T* dst = out->as<T>();
  const int64_t row_len = out_w * c;
  // Two interpolated source rows, by source row index, each with a float
  // of room after it (HorizontalPassRgb).
  const int64_t stride = row_len + 1;
  std::vector<float> cache(2 * stride);
  int64_t cached[2] = {-1, -1};
  auto row = [&](int64_t r) -> const float* {
    for (int slot = 0; slot < 2; ++slot) {
      if (cached[slot] == r) return cache.data() + slot * stride;
    }
    // Evict the lower-numbered row: taps only move down.
    const int slot = cached[0] < cached[1] ? 0 : 1;
    float* to = cache.data() + slot * stride;
    const T* from = src + r * in_w * c;
    if constexpr (std::is_same_v<T, uint8_t>) {
      if (c == 3) {
        HorizontalPassRgb(from, xs, in_w, to);
        cached[slot] = r;
        return to;
      }
    }
    if (c == 3) {
      HorizontalPass<T, 3>(from, xs, c, 0, to);
    } else if (c == 1) {
      HorizontalPass<T, 1>(from, xs, c, 0, to);
    } else {
      HorizontalPass<T, 0>(from, xs, c, 0, to);
    }
    cached[slot] = r;
    return to;
  };
  for (int64_t y = 0; y < out_h; ++y) {
    const float* upper = row(ys[y].lo);
    const float* lower = row(ys[y].hi);
    // row(hi) may have evicted lo when the two differ and neither was
    // cached: fetch lo again (then hi is kept, being the newer).
    if (ys[y].lo != ys[y].hi && cached[0] != ys[y].lo &&
        cached[1] != ys[y].lo) {
      upper = row(ys[y].lo);
    }
    VerticalPass<T>(upper, lower, ys[y].frac, row_len, dst + y * row_len);
  }
}

}  // namespace

void ShorterSideSize(int64_t height, int64_t width, int64_t shorter,
                     int64_t* out_height, int64_t* out_width) {
  const double scale = static_cast<double>(shorter) /
                       static_cast<double>(std::min(height, width));
  *out_height = std::max<int64_t>(1, std::llround(height * scale));
  *out_width = std::max<int64_t>(1, std::llround(width * scale));
  if (height <= width) *out_height = shorter;
  if (width <= height) *out_width = shorter;
}

absl::StatusOr<ResizeMode> ParseResizeMode(absl::string_view name) {
  if (name == "default") return ResizeMode::kDefault;
  if (name == "stretch") return ResizeMode::kStretch;
  if (name == "not_larger") return ResizeMode::kNotLarger;
  if (name == "not_smaller") return ResizeMode::kNotSmaller;
  return absl::InvalidArgumentError(
      absl::StrCat("\"default\", \"stretch\", \"not_larger\" or "
                   "\"not_smaller\", got \"",
                   name, "\""));
}

void RuleSize(int64_t in_h, int64_t in_w, const ResizeRule& rule,
              int64_t* out_h, int64_t* out_w) {
  const double in[2] = {static_cast<double>(in_h), static_cast<double>(in_w)};
  const double asked[2] = {rule.height, rule.width};
  const double limit[2] = {rule.max_height, rule.max_width};
  const bool given[2] = {asked[0] > 0, asked[1] > 0};
  double out[2] = {in[0], in[1]};
  if (given[0] || given[1]) {
    if (rule.mode == ResizeMode::kDefault ||
        rule.mode == ResizeMode::kStretch) {
      for (int d = 0; d < 2; ++d) {
        if (given[d]) out[d] = asked[d];
      }
      if (rule.mode == ResizeMode::kDefault && given[0] != given[1]) {
        const int g = given[0] ? 0 : 1;
        out[1 - g] = in[1 - g] * (asked[g] / in[g]);
      }
      for (int d = 0; d < 2; ++d) {
        if (limit[d] > 0) out[d] = std::min(out[d], limit[d]);
      }
    } else {
      const bool larger = rule.mode == ResizeMode::kNotSmaller;
      double scale = -1;
      for (int d = 0; d < 2; ++d) {
        if (!given[d]) continue;
        const double s = asked[d] / in[d];
        if (scale < 0 || (larger ? s > scale : s < scale)) scale = s;
      }
      for (int d = 0; d < 2; ++d) {
        if (limit[d] > 0) scale = std::min(scale, limit[d] / in[d]);
      }
      // A side whose own scale is the one chosen gets exactly its size.
      for (int d = 0; d < 2; ++d) {
        out[d] =
            given[d] && asked[d] / in[d] == scale ? asked[d] : in[d] * scale;
      }
    }
  }
  *out_h = std::max<int64_t>(1, std::llround(out[0]));
  *out_w = std::max<int64_t>(1, std::llround(out[1]));
}

absl::Status Resize(const SampleRef& in, int64_t height, int64_t width,
                    Sample* out, bool antialias) {
  absl::Status ok = ExpectImage("resize", in);
  if (!ok.ok()) return ok;
  return ResizeWindow(in, ResizeArea{in.shape[0], in.shape[1], 0, 0}, height,
                      width, CropWindow{}, height, width, out, antialias);
}

absl::Status ResizeNearest(const SampleRef& in, int64_t height, int64_t width,
                           Sample* out) {
  absl::Status ok = ExpectImage("resize", in);
  if (!ok.ok()) return ok;
  if (height < 1 || width < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("resize: size ", height, "x", width, " is empty"));
  }
  const int64_t in_h = in.shape[0], in_w = in.shape[1];
  const int64_t pixel = in.shape[2] * DataTypeSize(in.type);
  auto source = [](int64_t i, int64_t in_size, int64_t out_size) {
    const float scale =
        static_cast<float>(in_size) / static_cast<float>(out_size);
    const auto s = static_cast<int64_t>(
        std::floor((static_cast<float>(i) + 0.5f) * scale));
    return std::clamp<int64_t>(s, 0, in_size - 1);
  };
  std::vector<int64_t> columns(width);
  for (int64_t x = 0; x < width; ++x) columns[x] = source(x, in_w, width);
  const int64_t shape[] = {height, width, in.shape[2]};
  out->Reshape(in.type, shape);
  uint8_t* dst = out->storage.data();
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = in.data + source(y, in_h, height) * in_w * pixel;
    for (int64_t x = 0; x < width; ++x, dst += pixel) {
      std::memcpy(dst, row + columns[x] * pixel, pixel);
    }
  }
  return absl::OkStatus();
}

void SourceRows(int64_t in_size, int64_t out_size, int64_t first, int64_t count,
                int64_t* begin, int64_t* end, bool antialias) {
  *begin = in_size;
  *end = 0;
  if (antialias && in_size > out_size) {
    if (count > 0) {
      TriangleSourceRange(in_size, out_size, first, count, begin, end);
    }
  } else {
    for (const Tap& tap : Taps(in_size, out_size, first, count, 0)) {
      *begin = std::min(*begin, tap.lo);
      *end = std::max(*end, tap.hi + 1);
    }
  }
  if (*begin > *end) *begin = *end = 0;
}

absl::Status ResizeWindow(const SampleRef& in, const ResizeArea& area,
                          int64_t height, int64_t width,
                          const CropWindow& window, int64_t out_h,
                          int64_t out_w, Sample* out, bool antialias) {
  absl::Status ok = ExpectImage("resize", in);
  if (ok.ok()) ok = ExpectType("resize", in, {DT_UINT8, DT_FLOAT32});
  if (!ok.ok()) return ok;
  if (height < 1 || width < 1 || out_h < 1 || out_w < 1) {
    return absl::InvalidArgumentError(absl::StrCat("resize: size ", height, "x",
                                                   width, " (window ", out_h,
                                                   "x", out_w, ") is empty"));
  }
  if (window.y < 0 || window.x < 0 || window.y + out_h > height ||
      window.x + out_w > width) {
    return absl::InvalidArgumentError(
        absl::StrCat("resize: window ", out_h, "x", out_w, " at (", window.y,
                     ", ", window.x, ") leaves the size ", height, "x", width));
  }
  // Antialiasing changes only what shrinks; growing, bilinear is exact.
  antialias = antialias && (area.full_h > height || area.full_w > width);
  // The source rows and columns the window's taps read must be held.
  int64_t y0, y1, x0, x1;
  SourceRows(area.full_h, height, window.y, out_h, &y0, &y1, antialias);
  SourceRows(area.full_w, width, window.x, out_w, &x0, &x1, antialias);
  if (y0 < area.y || x0 < area.x || y1 > area.y + in.shape[0] ||
      x1 > area.x + in.shape[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "resize: the window reads source rows [", y0, ", ", y1,
        ") and columns [", x0, ", ", x1, "), but the image holds rows [",
        area.y, ", ", area.y + in.shape[0], ") and columns [", area.x, ", ",
        area.x + in.shape[1], ")"));
  }
  const int64_t shape[] = {out_h, out_w, in.shape[2]};
  out->Reshape(in.type, shape);
  if (antialias) {
    ResampleWindow(in, area, height, width, window, out_h, out_w, out);
  } else if (in.type == DT_UINT8) {
    ResizeImpl<uint8_t>(in, area, height, width, window, out_h, out_w, out);
  } else {
    ResizeImpl<float>(in, area, height, width, window, out_h, out_w, out);
  }
  return absl::OkStatus();
}

absl::Status PlaceCrop(int64_t in_h, int64_t in_w, int64_t height,
                       int64_t width, const CropPlace& place, SampleRng* rng,
                       CropWindow* window) {
  if (height < 1 || width < 1 || height > in_h || width > in_w) {
    return absl::InvalidArgumentError(
        absl::StrCat("crop: window ", height, "x", width,
                     " does not fit in the image of ", in_h, "x", in_w));
  }
  if (place.random) {
    window->y = rng->Below(in_h - height + 1);
    window->x = rng->Below(in_w - width + 1);
  } else if (place.anchored) {
    // In float, as DALI computes it: the same pixel for every anchor.
    window->y = static_cast<int64_t>(
        std::roundf(place.y * static_cast<float>(in_h - height)));
    window->x = static_cast<int64_t>(
        std::roundf(place.x * static_cast<float>(in_w - width)));
  } else {
    window->y = (in_h - height) / 2;
    window->x = (in_w - width) / 2;
  }
  return absl::OkStatus();
}

CropBox PlaceRandomAreaCrop(int64_t in_h, int64_t in_w, double area_lo,
                            double area_hi, double ratio_lo, double ratio_hi,
                            int64_t attempts, SampleRng* rng) {
  const double area = static_cast<double>(in_h) * static_cast<double>(in_w);
  const double log_lo = std::log(ratio_lo), log_hi = std::log(ratio_hi);
  for (int64_t k = 0; k < attempts; ++k) {
    const double target =
        area * (area_lo + (area_hi - area_lo) * rng->Uniform());
    const double ratio = std::exp(log_lo + (log_hi - log_lo) * rng->Uniform());
    const int64_t w = std::llround(std::sqrt(target * ratio));
    const int64_t h = std::llround(std::sqrt(target / ratio));
    if (w >= 1 && h >= 1 && w <= in_w && h <= in_h) {
      CropBox box{0, 0, h, w};
      box.y = rng->Below(in_h - h + 1);
      box.x = rng->Below(in_w - w + 1);
      return box;
    }
  }
  CropBox box{0, 0, in_h, in_w};
  const double ratio = static_cast<double>(in_w) / static_cast<double>(in_h);
  if (ratio < ratio_lo) {
    box.height = std::max<int64_t>(
        1, std::min<int64_t>(in_h, std::llround(in_w / ratio_lo)));
  } else if (ratio > ratio_hi) {
    box.width = std::max<int64_t>(
        1, std::min<int64_t>(in_w, std::llround(in_h * ratio_hi)));
  }
  box.y = (in_h - box.height) / 2;
  box.x = (in_w - box.width) / 2;
  return box;
}

absl::Status Crop(const SampleRef& in, const CropWindow& window, int64_t height,
                  int64_t width, Sample* out) {
  absl::Status ok = ExpectImage("crop", in);
  if (!ok.ok()) return ok;
  if (window.y < 0 || window.x < 0 || window.y + height > in.shape[0] ||
      window.x + width > in.shape[1]) {
    return absl::InvalidArgumentError(absl::StrCat(
        "crop: window ", height, "x", width, " at (", window.y, ", ", window.x,
        ") leaves the image of ", in.shape[0], "x", in.shape[1]));
  }
  const int64_t shape[] = {height, width, in.shape[2]};
  out->Reshape(in.type, shape);
  const int64_t pixel = in.shape[2] * DataTypeSize(in.type);
  const int64_t in_row = in.shape[1] * pixel;
  const int64_t out_row = width * pixel;
  for (int64_t y = 0; y < height; ++y) {
    std::memcpy(out->storage.data() + y * out_row,
                in.data + (window.y + y) * in_row + window.x * pixel, out_row);
  }
  return absl::OkStatus();
}

absl::Status Flip(const SampleRef& in, bool horizontal, bool vertical,
                  Sample* out) {
  absl::Status ok = ExpectImage("flip", in);
  if (!ok.ok()) return ok;
  out->Reshape(in.type, in.shape);
  const int64_t h = in.shape[0];
  const int64_t w = in.shape[1];
  const int64_t pixel = in.shape[2] * DataTypeSize(in.type);
  for (int64_t y = 0; y < h; ++y) {
    const uint8_t* src = in.data + (vertical ? h - 1 - y : y) * w * pixel;
    uint8_t* dst = out->storage.data() + y * w * pixel;
    if (!horizontal) {
      std::memcpy(dst, src, w * pixel);
      continue;
    }
    if (pixel == 3) {
      // RGB bytes: a constant-size copy the compiler inlines (the general
      // loop's memcpy of `pixel` bytes is a call per pixel).
      for (int64_t x = 0; x < w; ++x) {
        std::memcpy(dst + x * 3, src + (w - 1 - x) * 3, 3);
      }
      continue;
    }
    for (int64_t x = 0; x < w; ++x) {
      std::memcpy(dst + x * pixel, src + (w - 1 - x) * pixel, pixel);
    }
  }
  return absl::OkStatus();
}

namespace {

// mean and std as one value per channel of `c`: an error if they hold
// neither one nor c values.
absl::Status PerChannel(const std::vector<float>& values, const char* what,
                        int64_t c, std::vector<float>* full) {
  if (values.size() != 1 && static_cast<int64_t>(values.size()) != c) {
    return absl::InvalidArgumentError(absl::StrCat(
        "crop_mirror_normalize: ", what, " has ", values.size(),
        " values for an image of ", c, " channels (give 1 or ", c, ")"));
  }
  full->assign(c, values[0]);
  if (values.size() > 1) full->assign(values.begin(), values.end());
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckCropMirrorNormalize(const SampleRef& in,
                                      const CropWindow& window, int64_t height,
                                      int64_t width,
                                      const std::vector<float>& mean,
                                      const std::vector<float>& stddev) {
  absl::Status ok = ExpectImage("crop_mirror_normalize", in);
  if (ok.ok()) ok = ExpectType("crop_mirror_normalize", in, {DT_UINT8});
  if (!ok.ok()) return ok;
  std::vector<float> m, s;
  ok = PerChannel(mean, "mean", in.shape[2], &m);
  if (ok.ok()) ok = PerChannel(stddev, "std", in.shape[2], &s);
  if (!ok.ok()) return ok;
  if (std::find(s.begin(), s.end(), 0.0f) != s.end()) {
    return absl::InvalidArgumentError("crop_mirror_normalize: std has a zero");
  }
  if (window.y < 0 || window.x < 0 || window.y + height > in.shape[0] ||
      window.x + width > in.shape[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("crop_mirror_normalize: window ", height, "x", width,
                     " at (", window.y, ", ", window.x,
                     ") leaves the image of ", in.shape[0], "x", in.shape[1]));
  }
  return absl::OkStatus();
}

void CropMirrorNormalizeInto(const SampleRef& in, const CropWindow& window,
                             int64_t height, int64_t width, bool mirror,
                             const std::vector<float>& mean,
                             const std::vector<float>& stddev, float* dst,
                             const std::vector<float>& pad, bool stream) {
  const int64_t c = in.shape[2];
  std::vector<float> m, inv;
  PerChannel(mean, "mean", c, &m).IgnoreError();  // checked
  PerChannel(stddev, "std", c, &inv).IgnoreError();
  for (float& s : inv) s = 1.0f / s;
  const uint8_t* src = in.data;
  const int64_t in_w = in.shape[1];
  // (v - mean) * (1 / std) for every byte value, per channel: the values the
  // per-pixel arithmetic gives, at one load each.
  std::vector<float> table(c * 256);
  for (int64_t k = 0; k < c; ++k) {
    for (int v = 0; v < 256; ++v) {
      table[k * 256 + v] = (static_cast<float>(v) - m[k]) * inv[k];
    }
  }
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = src + ((window.y + y) * in_w + window.x) * c;
    // RGB: most of the row vectorized, the same values (normalize_rows.h).
    int64_t done = 0;
    if (c == 3) {
      float* const planes[3] = {dst + y * width, dst + (height + y) * width,
                                dst + (2 * height + y) * width};
      done = NormalizeRgbRow(row, width, mirror, m.data(), inv.data(), planes,
                             stream);
    }
    for (int64_t k = 0; k < c; ++k) {
      const float* of = table.data() + k * 256;
      const uint8_t* in_row = row + k;
      float* out_row = dst + (k * height + y) * width;
      if (mirror) {
        for (int64_t x = done; x < width; ++x) {
          out_row[x] = of[in_row[(width - 1 - x) * c]];
        }
      } else {
        for (int64_t x = done; x < width; ++x) out_row[x] = of[in_row[x * c]];
      }
    }
  }
  for (size_t k = 0; k < pad.size(); ++k) {
    float* plane = dst + (c + static_cast<int64_t>(k)) * height * width;
    std::fill(plane, plane + height * width, pad[k]);
  }
  if (stream) EndStreaming();
}

absl::Status CropMirrorNormalize(const SampleRef& in, const CropWindow& window,
                                 int64_t height, int64_t width, bool mirror,
                                 const std::vector<float>& mean,
                                 const std::vector<float>& stddev, Sample* out,
                                 const std::vector<float>& pad) {
  absl::Status ok =
      CheckCropMirrorNormalize(in, window, height, width, mean, stddev);
  if (!ok.ok()) return ok;
  const int64_t shape[] = {in.shape[2] + static_cast<int64_t>(pad.size()),
                           height, width};
  out->Reshape(DT_FLOAT32, shape);
  CropMirrorNormalizeInto(in, window, height, width, mirror, mean, stddev,
                          out->as<float>(), pad);
  return absl::OkStatus();
}

absl::Status DecodeResizeCrop(absl::Span<const uint8_t> encoded,
                              const DecodeCropSpec& spec, SampleRng* rng,
                              Sample* scratch, Sample* out, bool* bad_data) {
  *bad_data = true;
  auto header = ReadImageHeader(encoded, spec.decode.adjust_orientation);
  if (!header.ok()) return header.status();
  // Windows and sizes are the upright image's when it is turned upright.
  const int64_t h = header->upright_height(), w = header->upright_width();
  if (spec.decode.max_pixels > 0 && h * w > spec.decode.max_pixels) {
    // The decoder's own check, with its message.
    return DecodeImage(encoded, spec.decode, out);
  }
  if (spec.area_attempts > 0) {
    const CropBox box =
        PlaceRandomAreaCrop(h, w, spec.area_lo, spec.area_hi, spec.ratio_lo,
                            spec.ratio_hi, spec.area_attempts, rng);
    DecodeOptions options = spec.decode;
    options.y = box.y;
    options.x = box.x;
    options.h = box.height;
    options.w = box.width;
    DecodedRegion region;
    absl::Status ok = DecodeImage(encoded, options, scratch, &region);
    if (!ok.ok()) return ok;
    if (spec.crop_h <= 0 || spec.crop_w <= 0) {
      return Crop(scratch->ref(),
                  CropWindow{box.y - region.y, box.x - region.x}, box.height,
                  box.width, out);
    }
    // The window is the resize's source; the decoded region holds it from
    // (box.y - region.y, box.x - region.x), with a margin around it.
    return ResizeWindow(
        scratch->ref(),
        ResizeArea{box.height, box.width, region.y - box.y, region.x - box.x},
        spec.crop_h, spec.crop_w, CropWindow{}, spec.crop_h, spec.crop_w, out,
        spec.antialias);
  }
  // The resized size (the image's own without a resize).
  int64_t rh = h, rw = w;
  const bool resize =
      spec.shorter > 0 || (spec.resize_h > 0 && spec.resize_w > 0);
  if (spec.shorter > 0) {
    ShorterSideSize(h, w, spec.shorter, &rh, &rw);
  } else if (resize) {
    rh = spec.resize_h;
    rw = spec.resize_w;
  }
  CropWindow window;
  int64_t out_h = rh, out_w = rw;
  if (spec.crop_h > 0 && spec.crop_w > 0) {
    out_h = spec.crop_h;
    out_w = spec.crop_w;
    absl::Status placed =
        PlaceCrop(rh, rw, out_h, out_w, spec.place, rng, &window);
    if (!placed.ok()) {
      *bad_data = false;  // a pipeline that crops more than it resizes
      return placed;
    }
  }
  DecodeOptions options = spec.decode;
  DecodedRegion region;
  if (!resize) {
    // A crop of the image itself: decode its rows and columns only.
    options.y = window.y;
    options.x = window.x;
    options.h = out_h;
    options.w = out_w;
    absl::Status ok = DecodeImage(encoded, options, scratch, &region);
    if (!ok.ok()) return ok;
    return Crop(scratch->ref(),
                CropWindow{window.y - region.y, window.x - region.x}, out_h,
                out_w, out);
  }
  options.scale_eighths = DctScaleFor(h, w, rh, rw);
  int64_t y0, y1, x0, x1;
  // Antialiased only where the (scaled) decode still shrinks, as
  // ResizeWindow decides.
  const int64_t sh = ScaledSize(h, options.scale_eighths);
  const int64_t sw = ScaledSize(w, options.scale_eighths);
  const bool antialias = spec.antialias && (sh > rh || sw > rw);
  SourceRows(sh, rh, window.y, out_h, &y0, &y1, antialias);
  SourceRows(sw, rw, window.x, out_w, &x0, &x1, antialias);
  options.y = y0;
  options.h = y1 - y0;
  options.x = x0;
  options.w = x1 - x0;
  absl::Status ok = DecodeImage(encoded, options, scratch, &region);
  if (!ok.ok()) return ok;
  return ResizeWindow(
      scratch->ref(),
      ResizeArea{region.full_height, region.full_width, region.y, region.x}, rh,
      rw, window, out_h, out_w, out, antialias);
}

absl::Status CastSample(const SampleRef& in, DataType to, Sample* out,
                        bool round) {
  out->Reshape(to, in.shape);
  const int64_t n = ShapeElemCnt(in.shape);
  return VisitDataType(in.type, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    return VisitDataType(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* src = in.as<From>();
      To* dst = out->as<To>();
      if constexpr (std::is_floating_point_v<From> &&
                    !std::is_floating_point_v<To> &&
                    !std::is_same_v<To, bool>) {
        if (round) {
          for (int64_t i = 0; i < n; ++i) {
            dst[i] = ConvertElement<To>(std::round(src[i]));
          }
          return absl::OkStatus();
        }
      }
      for (int64_t i = 0; i < n; ++i) dst[i] = ConvertElement<To>(src[i]);
      return absl::OkStatus();
    });
  });
}

}  // namespace actorflow::internal::pipeline
