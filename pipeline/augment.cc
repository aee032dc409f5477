#include "pipeline/augment.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/convert.h"
#include "pipeline/image_codec.h"
#include "pipeline/pixel_store.h"

namespace actorflow::internal::pipeline {
namespace {

constexpr double kPi = 3.14159265358979323846;

absl::Status ExpectImage(const char* op, const SampleRef& in) {
  if (in.shape.size() == 3 && in.shape[0] > 0 && in.shape[1] > 0 &&
      in.shape[2] > 0 && (in.type == DT_UINT8 || in.type == DT_FLOAT32)) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": wants an HWC image of uint8 or float32, got ",
                   DataTypeName(in.type), " ", ShapeString(in.shape)));
}

absl::Status FillFor(const char* op, const std::vector<float>& fill,
                     int64_t channels, std::vector<float>* per_channel) {
  if (fill.empty()) {
    per_channel->assign(channels, 0.0f);
  } else if (fill.size() == 1) {
    per_channel->assign(channels, fill[0]);
  } else if (static_cast<int64_t>(fill.size()) == channels) {
    *per_channel = fill;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": fill_value has ", fill.size(),
                     " values for an image of ", channels, " channels"));
  }
  return absl::OkStatus();
}

// Calls f(T{}) with T the image's element type (uint8_t or float).
template <typename F>
void ByType(const SampleRef& in, F&& f) {
  if (in.type == DT_UINT8) {
    f(uint8_t{});
  } else {
    f(float{});
  }
}

// Sets rows [y0, y1) and columns [x0, x1) of an image w wide with c
// channels to the fill.
template <typename T>
void FillRect(T* dst, int64_t w, int64_t c, int64_t y0, int64_t y1, int64_t x0,
              int64_t x1, const std::vector<float>& fills) {
  for (int64_t y = y0; y < y1; ++y) {
    for (int64_t x = x0; x < x1; ++x) {
      for (int64_t k = 0; k < c; ++k) {
        dst[(y * w + x) * c + k] = StorePixel<T>(fills[k]);
      }
    }
  }
}

// Bilinear at (sy, sx) in pixel-centre coordinates; the fill outside.
template <typename T>
void Sample2d(const T* src, int64_t h, int64_t w, int64_t c, double sy,
              double sx, const float* fill, T* to) {
  if (sy < -0.5 || sx < -0.5 || sy > h - 0.5 || sx > w - 0.5) {
    for (int64_t k = 0; k < c; ++k) to[k] = StorePixel<T>(fill[k]);
    return;
  }
  sy = std::min(std::max(sy, 0.0), static_cast<double>(h - 1));
  sx = std::min(std::max(sx, 0.0), static_cast<double>(w - 1));
  const int64_t y0 = static_cast<int64_t>(sy), x0 = static_cast<int64_t>(sx);
  const int64_t y1 = std::min(y0 + 1, h - 1), x1 = std::min(x0 + 1, w - 1);
  const float fy = static_cast<float>(sy - y0),
              fx = static_cast<float>(sx - x0);
  for (int64_t k = 0; k < c; ++k) {
    const float a = src[(y0 * w + x0) * c + k], b = src[(y0 * w + x1) * c + k];
    const float d = src[(y1 * w + x0) * c + k], e = src[(y1 * w + x1) * c + k];
    const float top = a + (b - a) * fx, bottom = d + (e - d) * fx;
    to[k] = StorePixel<T>(top + (bottom - top) * fy);
  }
}

}  // namespace

absl::Status BrightnessContrast(const SampleRef& in, float brightness,
                                float shift, float contrast, float center,
                                Sample* out) {
  absl::Status ok = ExpectImage("brightness_contrast", in);
  if (!ok.ok()) return ok;
  out->Reshape(in.type, in.shape);
  const int64_t n = ShapeElemCnt(in.shape);
  const float range = in.type == DT_UINT8 ? 255.0f : 1.0f;
  ByType(in, [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.as<T>();
    T* dst = out->as<T>();
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(src[i]);
      dst[i] = StorePixel<T>(shift * range +
                             brightness * (center + contrast * (v - center)));
    }
  });
  return absl::OkStatus();
}

ColorMatrix HsvMatrix(float hue_degrees, float saturation, float value) {
  // RGB <-> YIQ (NTSC).
  static constexpr double kToYiq[3][3] = {
      {0.299, 0.587, 0.114}, {0.596, -0.274, -0.322}, {0.211, -0.523, 0.312}};
  static constexpr double kToRgb[3][3] = {
      {1.0, 0.956, 0.621}, {1.0, -0.272, -0.647}, {1.0, -1.106, 1.703}};
  const double h = hue_degrees * kPi / 180.0;
  const double s = saturation, v = value;
  const double yiq[3][3] = {{v, 0, 0},
                            {0, v * s * std::cos(h), -v * s * std::sin(h)},
                            {0, v * s * std::sin(h), v * s * std::cos(h)}};
  double tmp[3][3] = {};
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      for (int k = 0; k < 3; ++k) tmp[i][j] += yiq[i][k] * kToYiq[k][j];
    }
  }
  ColorMatrix m;
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) {
      double sum = 0;
      for (int k = 0; k < 3; ++k) sum += kToRgb[i][k] * tmp[k][j];
      m.m[i][j] = static_cast<float>(sum);
    }
  }
  return m;
}

ColorMatrix ColorTwistMatrix(float hue_degrees, float saturation, float value,
                             float brightness, float contrast, float center) {
  ColorMatrix m = HsvMatrix(hue_degrees, saturation, value);
  // brightness * (center + contrast * (x - center)) after the matrix.
  for (int i = 0; i < 3; ++i) {
    for (int j = 0; j < 3; ++j) m.m[i][j] *= brightness * contrast;
    m.offset[i] = brightness * center * (1.0f - contrast);
  }
  return m;
}

absl::Status ApplyColorMatrix(const SampleRef& in, const ColorMatrix& matrix,
                              Sample* out) {
  absl::Status ok = ExpectImage("hsv", in);
  if (ok.ok() && in.shape[2] != 3) {
    ok = absl::InvalidArgumentError(absl::StrCat(
        "hsv: wants 3 channels (RGB), got ", ShapeString(in.shape)));
  }
  if (!ok.ok()) return ok;
  out->Reshape(in.type, in.shape);
  const int64_t pixels = in.shape[0] * in.shape[1];
  ByType(in, [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.as<T>();
    T* dst = out->as<T>();
    for (int64_t p = 0; p < pixels; ++p) {
      const float r = src[3 * p], g = src[3 * p + 1], b = src[3 * p + 2];
      for (int c = 0; c < 3; ++c) {
        dst[3 * p + c] = StorePixel<T>(matrix.m[c][0] * r + matrix.m[c][1] * g +
                                       matrix.m[c][2] * b + matrix.offset[c]);
      }
    }
  });
  return absl::OkStatus();
}

int ChannelsOf(ColorSpace space) { return space == ColorSpace::kGray ? 1 : 3; }

absl::Status ConvertColorSpace(const SampleRef& in, ColorSpace from,
                               ColorSpace to, Sample* out) {
  absl::Status ok = ExpectImage("color_space_conversion", in);
  if (ok.ok() && in.shape[2] != ChannelsOf(from)) {
    ok = absl::InvalidArgumentError(absl::StrCat(
        "color_space_conversion: the image type wants ", ChannelsOf(from),
        " channel(s), got ", ShapeString(in.shape)));
  }
  if (!ok.ok()) return ok;
  const int64_t shape[] = {in.shape[0], in.shape[1], ChannelsOf(to)};
  out->Reshape(in.type, shape);
  const int64_t pixels = in.shape[0] * in.shape[1];
  const int in_c = ChannelsOf(from), out_c = ChannelsOf(to);
  ByType(in, [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.as<T>();
    T* dst = out->as<T>();
    for (int64_t p = 0; p < pixels; ++p) {
      const T* px = src + p * in_c;
      T* to_px = dst + p * out_c;
      // Luma (gray, or YCbCr's Y) passes as it is; everything else goes
      // through R, G, B as floats, exact for the integers a pixel holds.
      if (to == ColorSpace::kGray &&
          (from == ColorSpace::kGray || from == ColorSpace::kYCbCr)) {
        to_px[0] = px[0];
        continue;
      }
      if (to == ColorSpace::kYCbCr && from == ColorSpace::kGray) {
        to_px[0] = px[0];
        to_px[1] = to_px[2] = StorePixel<T>(128.0f);
        continue;
      }
      float r = 0, g = 0, b = 0;  // every space sets them below
      const float v0 = static_cast<float>(px[0]);
      switch (from) {
        case ColorSpace::kRgb:
          r = v0, g = static_cast<float>(px[1]), b = static_cast<float>(px[2]);
          break;
        case ColorSpace::kBgr:
          b = v0, g = static_cast<float>(px[1]), r = static_cast<float>(px[2]);
          break;
        case ColorSpace::kGray:
          r = g = b = v0;
          break;
        case ColorSpace::kYCbCr: {
          const float cb = static_cast<float>(px[1]) - 128.0f;
          const float cr = static_cast<float>(px[2]) - 128.0f;
          r = v0 + 1.402f * cr;
          g = v0 - 0.34413629f * cb - 0.71413629f * cr;
          b = v0 + 1.772f * cb;
          break;
        }
      }
      switch (to) {
        case ColorSpace::kRgb:
          to_px[0] = StorePixel<T>(r);
          to_px[1] = StorePixel<T>(g);
          to_px[2] = StorePixel<T>(b);
          break;
        case ColorSpace::kBgr:
          to_px[0] = StorePixel<T>(b);
          to_px[1] = StorePixel<T>(g);
          to_px[2] = StorePixel<T>(r);
          break;
        case ColorSpace::kGray:
          to_px[0] = StorePixel<T>(0.299f * r + 0.587f * g + 0.114f * b);
          break;
        case ColorSpace::kYCbCr:
          to_px[0] = StorePixel<T>(0.299f * r + 0.587f * g + 0.114f * b);
          to_px[1] = StorePixel<T>(-0.16873589f * r - 0.33126411f * g +
                                   0.5f * b + 128.0f);
          to_px[2] = StorePixel<T>(0.5f * r - 0.41868759f * g -
                                   0.08131241f * b + 128.0f);
          break;
      }
    }
  });
  return absl::OkStatus();
}

absl::Status WarpAffine(const SampleRef& in, const double m[6], int64_t out_h,
                        int64_t out_w, const std::vector<float>& fill,
                        Sample* out) {
  absl::Status ok = ExpectImage("warp_affine", in);
  if (!ok.ok()) return ok;
  if (out_h < 1 || out_w < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "warp_affine: output size ", out_h, "x", out_w, " is empty"));
  }
  const int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
  std::vector<float> fills;
  ok = FillFor("warp_affine", fill, c, &fills);
  if (!ok.ok()) return ok;
  const int64_t shape[] = {out_h, out_w, c};
  out->Reshape(in.type, shape);
  ByType(in, [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.as<T>();
    T* dst = out->as<T>();
    for (int64_t y = 0; y < out_h; ++y) {
      for (int64_t x = 0; x < out_w; ++x) {
        const double px = x + 0.5, py = y + 0.5;
        const double sx = m[0] * px + m[1] * py + m[2] - 0.5;
        const double sy = m[3] * px + m[4] * py + m[5] - 0.5;
        Sample2d<T>(src, h, w, c, sy, sx, fills.data(),
                    dst + (y * out_w + x) * c);
      }
    }
  });
  return absl::OkStatus();
}

void RotatedSize(int64_t h, int64_t w, double degrees, int64_t* out_h,
                 int64_t* out_w) {
  const double a = degrees * kPi / 180.0;
  const double c = std::abs(std::cos(a)), s = std::abs(std::sin(a));
  // The epsilon keeps 90 degrees (cos ~ 6e-17) from adding a pixel.
  *out_w = std::max<int64_t>(1, std::ceil(w * c + h * s - 1e-6));
  *out_h = std::max<int64_t>(1, std::ceil(w * s + h * c - 1e-6));
  // Each side takes the parity of the input side it mostly comes from,
  // so that centres stay on the pixel grid (a small turn blurs less, and
  // a quarter turn moves pixels exactly).
  const int64_t from_w = c >= s ? w : h, from_h = c >= s ? h : w;
  if (*out_w % 2 != from_w % 2) ++*out_w;
  if (*out_h % 2 != from_h % 2) ++*out_h;
}

absl::Status Rotate(const SampleRef& in, double degrees, int64_t out_h,
                    int64_t out_w, const std::vector<float>& fill,
                    Sample* out) {
  absl::Status ok = ExpectImage("rotate", in);
  if (!ok.ok()) return ok;
  // Counter-clockwise on screen (y down): an output point q comes from
  // the input point p = R(-angle) q, about each image's centre.
  const double a = degrees * kPi / 180.0;
  const double c = std::cos(a), s = std::sin(a);
  const double ocx = out_w / 2.0, ocy = out_h / 2.0;
  const double icx = in.shape[1] / 2.0, icy = in.shape[0] / 2.0;
  const double m[6] = {c, -s, icx - c * ocx + s * ocy,
                       s, c,  icy - s * ocx - c * ocy};
  return WarpAffine(in, m, out_h, out_w, fill, out);
}

namespace {

// Output pixel (y, x) from the input at point(y, x) = (px, py) (see
// Water): the pixel holding it, or bilinear about pixel centres.
template <typename Point>
absl::Status Displace(const char* op, const SampleRef& in, bool linear,
                      const std::vector<float>& fill, Point point,
                      Sample* out) {
  absl::Status ok = ExpectImage(op, in);
  if (!ok.ok()) return ok;
  const int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
  std::vector<float> fills;
  ok = FillFor(op, fill, c, &fills);
  if (!ok.ok()) return ok;
  out->Reshape(in.type, in.shape);
  ByType(in, [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.as<T>();
    T* dst = out->as<T>();
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        const auto [px, py] = point(y, x);
        T* to = dst + (y * w + x) * c;
        if (linear) {
          Sample2d<T>(src, h, w, c, py - 0.5, px - 0.5, fills.data(), to);
          continue;
        }
        const double fy = std::floor(py), fx = std::floor(px);
        if (fy < 0 || fx < 0 || fy >= h || fx >= w) {
          for (int64_t k = 0; k < c; ++k) to[k] = StorePixel<T>(fills[k]);
          continue;
        }
        const T* from =
            src + (static_cast<int64_t>(fy) * w + static_cast<int64_t>(fx)) * c;
        std::copy(from, from + c, to);
      }
    }
  });
  return absl::OkStatus();
}

}  // namespace

absl::Status Water(const SampleRef& in, const Wave& along_x,
                   const Wave& along_y, bool linear,
                   const std::vector<float>& fill, Sample* out) {
  // In float, as DALI computes it: the nearest pixel of a point on a
  // boundary is the same.
  return Displace(
      "water", in, linear, fill,
      [&](int64_t y, int64_t x) {
        const float fy = static_cast<float>(y);
        const float fx = static_cast<float>(x);
        return std::pair<double, double>{
            fx + along_x.ampl * std::sin(along_x.freq * fy + along_x.phase),
            fy + along_y.ampl * std::cos(along_y.freq * fx + along_y.phase)};
      },
      out);
}

absl::Status Sphere(const SampleRef& in, bool linear,
                    const std::vector<float>& fill, Sample* out) {
  if (in.shape.size() != 3) return ExpectImage("sphere", in);
  const float mid_y = static_cast<float>(in.shape[0]) * 0.5f;
  const float mid_x = static_cast<float>(in.shape[1]) * 0.5f;
  const float d =
      static_cast<float>(static_cast<int64_t>(std::max(mid_x, mid_y)));
  return Displace(
      "sphere", in, linear, fill,
      [&](int64_t y, int64_t x) {
        const float dy = static_cast<float>(y) + 0.5f - mid_y;
        const float dx = static_cast<float>(x) + 0.5f - mid_x;
        const float r = std::sqrt(dx * dx + dy * dy) / d;
        return std::pair<double, double>{mid_x + r * dx, mid_y + r * dy};
      },
      out);
}

absl::Status Jitter(const SampleRef& in, int64_t n_degree, SampleRng* rng,
                    bool linear, const std::vector<float>& fill, Sample* out) {
  if (n_degree < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("jitter: n_degree ", n_degree, ": at least 1"));
  }
  const uint64_t span = static_cast<uint64_t>(n_degree);
  const int64_t half = n_degree / 2;
  return Displace(
      "jitter", in, linear, fill,
      [&](int64_t y, int64_t x) {
        const int64_t dx = static_cast<int64_t>(rng->Next() % span) - half;
        const int64_t dy = static_cast<int64_t>(rng->Next() % span) - half;
        return std::pair<double, double>{static_cast<double>(x + dx) + 0.5,
                                         static_cast<double>(y + dy) + 0.5};
      },
      out);
}

absl::Status JpegCompressionDistortion(const SampleRef& in, int quality,
                                       Sample* out) {
  if (in.type != DT_UINT8 || in.shape.size() != 3 || in.shape[2] != 3 ||
      in.shape[0] < 1 || in.shape[1] < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "jpeg_compression_distortion: wants an RGB uint8 image, got ",
        DataTypeName(in.type), " ", ShapeString(in.shape)));
  }
  auto encoded = EncodeJpeg(in, std::clamp(quality, 1, 100));
  if (!encoded.ok()) return encoded.status();
  return DecodeImage(
      absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(encoded->data()),
                          encoded->size()),
      3, out);
}

absl::Status Erase(const SampleRef& in, const std::vector<Region>& regions,
                   const std::vector<float>& fill, Sample* out) {
  absl::Status ok = ExpectImage("erase", in);
  if (!ok.ok()) return ok;
  const int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
  std::vector<float> fills;
  ok = FillFor("erase", fill, c, &fills);
  if (!ok.ok()) return ok;
  out->Reshape(in.type, in.shape);
  std::memcpy(out->storage.data(), in.data, in.bytes);
  ByType(in, [&](auto tag) {
    using T = decltype(tag);
    T* dst = out->as<T>();
    for (const Region& r : regions) {
      FillRect(dst, w, c, std::max<int64_t>(0, r.y), std::min(h, r.y + r.h),
               std::max<int64_t>(0, r.x), std::min(w, r.x + r.w), fills);
    }
  });
  return absl::OkStatus();
}

absl::Status Paste(const SampleRef& in, double ratio, double paste_y,
                   double paste_x, const std::vector<float>& fill,
                   Sample* out) {
  absl::Status ok = ExpectImage("paste", in);
  if (!ok.ok()) return ok;
  if (!(ratio >= 1) || paste_x < 0 || paste_x > 1 || paste_y < 0 ||
      paste_y > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("paste: ratio ", ratio, " (at least 1), paste_x ", paste_x,
                     " and paste_y ", paste_y, " (in [0, 1])"));
  }
  const int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
  std::vector<float> fills;
  ok = FillFor("paste", fill, c, &fills);
  if (!ok.ok()) return ok;
  const int64_t out_h = std::max<int64_t>(h, std::llround(h * ratio));
  const int64_t out_w = std::max<int64_t>(w, std::llround(w * ratio));
  const int64_t y0 = static_cast<int64_t>((out_h - h) * paste_y);
  const int64_t x0 = static_cast<int64_t>((out_w - w) * paste_x);
  const int64_t shape[] = {out_h, out_w, c};
  out->Reshape(in.type, shape);
  ByType(in, [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.as<T>();
    T* dst = out->as<T>();
    FillRect(dst, out_w, c, 0, out_h, 0, out_w, fills);
    for (int64_t y = 0; y < h; ++y) {
      std::memcpy(dst + ((y0 + y) * out_w + x0) * c, src + y * w * c,
                  w * c * sizeof(T));
    }
  });
  return absl::OkStatus();
}

std::vector<float> GaussianKernel(double sigma, int64_t window) {
  std::vector<float> k(window);
  const int64_t r = window / 2;
  double sum = 0;
  for (int64_t i = 0; i < window; ++i) {
    const double d = static_cast<double>(i - r);
    const double v = sigma > 0 ? std::exp(-d * d / (2 * sigma * sigma))
                               : (i == r ? 1.0 : 0.0);
    k[i] = static_cast<float>(v);
    sum += v;
  }
  for (float& v : k) v = static_cast<float>(v / sum);
  return k;
}

absl::Status GaussianBlur(const SampleRef& in, double sigma_y, double sigma_x,
                          int64_t window_y, int64_t window_x, Sample* out) {
  absl::Status ok = ExpectImage("gaussian_blur", in);
  if (!ok.ok()) return ok;
  if (window_y < 1 || window_x < 1 || window_y % 2 == 0 || window_x % 2 == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("gaussian_blur: windows must be odd and positive, got ",
                     window_y, " x ", window_x));
  }
  const int64_t h = in.shape[0], w = in.shape[1], c = in.shape[2];
  const std::vector<float> ky = GaussianKernel(sigma_y, window_y);
  const std::vector<float> kx = GaussianKernel(sigma_x, window_x);
  // Mirrored without repeating the edge; an image of one pixel repeats it.
  auto mirror = [](int64_t i, int64_t n) {
    if (n == 1) return int64_t{0};
    const int64_t period = 2 * (n - 1);
    i = ((i % period) + period) % period;
    return i < n ? i : period - i;
  };
  std::vector<float> rows(h * w * c);  // blurred along the width
  ByType(in, [&](auto tag) {
    using T = decltype(tag);
    const T* src = in.as<T>();
    const int64_t rx = window_x / 2;
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t x = 0; x < w; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          float sum = 0;
          for (int64_t t = 0; t < window_x; ++t) {
            sum += kx[t] * src[(y * w + mirror(x + t - rx, w)) * c + k];
          }
          rows[(y * w + x) * c + k] = sum;
        }
      }
    }
    out->Reshape(in.type, in.shape);
    T* dst = out->as<T>();
    const int64_t ry = window_y / 2;
    for (int64_t y = 0; y < h; ++y) {
      for (int64_t i = 0; i < w * c; ++i) {
        float sum = 0;
        for (int64_t t = 0; t < window_y; ++t) {
          sum += ky[t] * rows[mirror(y + t - ry, h) * w * c + i];
        }
        dst[y * w * c + i] = StorePixel<T>(sum);
      }
    }
  });
  return absl::OkStatus();
}

absl::Status Transpose(const SampleRef& in, const std::vector<int64_t>& perm,
                       Sample* out) {
  const int64_t rank = static_cast<int64_t>(in.shape.size());
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool valid = static_cast<int64_t>(perm.size()) == rank;
  for (int64_t i = 0; valid && i < rank; ++i) valid = sorted[i] == i;
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat("transpose: perm [", absl::StrJoin(perm, ", "),
                     "] is no permutation of the sample's ", rank, " axes"));
  }
  SampleShape shape(rank);
  for (int64_t i = 0; i < rank; ++i) shape[i] = in.shape[perm[i]];
  out->Reshape(in.type, shape);
  const int64_t size = DataTypeSize(in.type);
  const int64_t n = ShapeElemCnt(in.shape);
  // Input strides, in elements, read in the output's order.
  std::vector<int64_t> in_stride(rank, 1), stride(rank);
  for (int64_t i = rank - 2; i >= 0; --i) {
    in_stride[i] = in_stride[i + 1] * in.shape[i + 1];
  }
  for (int64_t i = 0; i < rank; ++i) stride[i] = in_stride[perm[i]];
  std::vector<int64_t> index(rank, 0);
  int64_t from = 0;
  for (int64_t o = 0; o < n; ++o) {
    std::memcpy(out->storage.data() + o * size, in.data + from * size, size);
    for (int64_t d = rank - 1; d >= 0; --d) {
      from += stride[d];
      if (++index[d] < shape[d]) break;
      from -= stride[d] * shape[d];
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status ScaleShift(const SampleRef& in, const std::vector<float>& scale,
                        const std::vector<float>& shift, Sample* out) {
  const int64_t last = in.shape.empty() ? 1 : in.shape.back();
  for (const auto* values : {&scale, &shift}) {
    const int64_t size = static_cast<int64_t>(values->size());
    if (size != 1 && size != last) {
      return absl::InvalidArgumentError(
          absl::StrCat("scale_shift: ", size, " values for samples of ",
                       ShapeString(in.shape),
                       " (give 1, or one per element of the last "
                       "axis)"));
    }
  }
  out->Reshape(DT_FLOAT32, in.shape);
  const int64_t n = ShapeElemCnt(in.shape);
  float* dst = out->as<float>();
  // Per element of the last axis: i % last picks the value.
  const int64_t scales = static_cast<int64_t>(scale.size());
  const int64_t shifts = static_cast<int64_t>(shift.size());
  return VisitDataType(in.type, [&](auto tag) {
    using From = typename decltype(tag)::type;
    const From* src = in.as<From>();
    for (int64_t i = 0; i < n; ++i) {
      const int64_t k = last > 0 ? i % last : 0;
      dst[i] = ConvertElement<float>(src[i]) * scale[scales == 1 ? 0 : k] +
               shift[shifts == 1 ? 0 : k];
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<ArithOp> ParseArithOp(const std::string& name) {
  if (name == "add") return ArithOp::kAdd;
  if (name == "sub") return ArithOp::kSub;
  if (name == "mul") return ArithOp::kMul;
  if (name == "div") return ArithOp::kDiv;
  if (name == "min") return ArithOp::kMin;
  if (name == "max") return ArithOp::kMax;
  if (name == "pow") return ArithOp::kPow;
  if (name == "atan2") return ArithOp::kAtan2;
  return absl::InvalidArgumentError(
      absl::StrCat("\"add\", \"sub\", \"mul\", \"div\", \"min\", \"max\", "
                   "\"pow\" or \"atan2\", got \"",
                   name, "\""));
}

absl::Status Arith(const SampleRef& a, const SampleRef& b, ArithOp op,
                   Sample* out) {
  // NumPy's broadcasting: the shapes aligned at their last axes; along each
  // axis the extents are equal or one of them is 1 (or the axis missing),
  // which then repeats. step_x[d] / step_y[d]: each side's step along
  // output axis d (0 where it repeats).
  const int64_t ra = static_cast<int64_t>(a.shape.size());
  const int64_t rb = static_cast<int64_t>(b.shape.size());
  const int64_t rank = std::max(ra, rb);
  SampleShape shape(rank);
  std::vector<int64_t> step_x(rank, 0), step_y(rank, 0);
  int64_t stride_x = 1, stride_y = 1;
  for (int64_t d = rank - 1; d >= 0; --d) {
    const int64_t ea = d - (rank - ra) >= 0 ? a.shape[d - (rank - ra)] : 1;
    const int64_t eb = d - (rank - rb) >= 0 ? b.shape[d - (rank - rb)] : 1;
    if (ea != eb && ea != 1 && eb != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "arithmetic between samples of ", ShapeString(a.shape), " and ",
          ShapeString(b.shape), ": axis ", d - rank, " has extents ", ea,
          " and ", eb, " (broadcasting as NumPy: equal, or one of them 1)"));
    }
    shape[d] = ea == 1 ? eb : ea;
    step_x[d] = ea == 1 ? 0 : stride_x;
    step_y[d] = eb == 1 ? 0 : stride_y;
    stride_x *= ea;
    stride_y *= eb;
  }
  // Each side as float32 (the output's type), then the operation.
  auto floats = [](const SampleRef& s, std::vector<float>* to) {
    to->resize(ShapeElemCnt(s.shape));
    return VisitDataType(s.type, [&](auto tag) {
      using From = typename decltype(tag)::type;
      const From* src = s.as<From>();
      for (size_t i = 0; i < to->size(); ++i) {
        (*to)[i] = ConvertElement<float>(src[i]);
      }
      return absl::OkStatus();
    });
  };
  std::vector<float> x, y;
  absl::Status ok = floats(a, &x);
  if (ok.ok()) ok = floats(b, &y);
  if (!ok.ok()) return ok;
  out->Reshape(DT_FLOAT32, shape);
  const int64_t n = ShapeElemCnt(shape);
  float* dst = out->as<float>();
  std::vector<int64_t> index(rank, 0);
  int64_t ix = 0, iy = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float u = x[ix], v = y[iy];
    switch (op) {
      case ArithOp::kAdd:
        dst[i] = u + v;
        break;
      case ArithOp::kSub:
        dst[i] = u - v;
        break;
      case ArithOp::kMul:
        dst[i] = u * v;
        break;
      case ArithOp::kDiv:
        dst[i] = u / v;
        break;
      case ArithOp::kMin:
        dst[i] = std::fmin(u, v);
        break;
      case ArithOp::kMax:
        dst[i] = std::fmax(u, v);
        break;
      case ArithOp::kPow:
        dst[i] = std::pow(u, v);
        break;
      case ArithOp::kAtan2:
        dst[i] = std::atan2(u, v);
        break;
    }
    for (int64_t d = rank - 1; d >= 0; --d) {  // the next index, odometer
      ix += step_x[d];
      iy += step_y[d];
      if (++index[d] < shape[d]) break;
      ix -= step_x[d] * shape[d];
      iy -= step_y[d] * shape[d];
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

absl::Status OneHot(const SampleRef& in, int64_t classes, float on, float off,
                    Sample* out) {
  if (classes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("one_hot: num_classes must be at least 1, got ", classes));
  }
  if (in.type != DT_INT32 && in.type != DT_INT64 && in.type != DT_UINT8) {
    return absl::InvalidArgumentError(absl::StrCat(
        "one_hot: takes integer samples, got ", DataTypeName(in.type)));
  }
  SampleShape shape(in.shape.begin(), in.shape.end());
  shape.push_back(classes);
  out->Reshape(DT_FLOAT32, shape);
  const int64_t n = ShapeElemCnt(in.shape);
  float* dst = out->as<float>();
  std::fill(dst, dst + n * classes, off);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = in.type == DT_INT32   ? in.as<int32_t>()[i]
                      : in.type == DT_INT64 ? in.as<int64_t>()[i]
                                            : in.as<uint8_t>()[i];
    if (v < 0 || v >= classes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "one_hot: value ", v, " is not below num_classes ", classes));
    }
    dst[i * classes + v] = on;
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
