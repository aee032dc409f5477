#include "pipeline/image_ops.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/convert.h"

namespace actorflow::pipeline {
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

std::vector<Tap> Taps(int64_t in_size, int64_t out_size) {
  std::vector<Tap> taps(out_size);
  const double scale = static_cast<double>(in_size) / out_size;
  for (int64_t o = 0; o < out_size; ++o) {
    double src = (o + 0.5) * scale - 0.5;
    src = std::max(0.0, std::min(src, static_cast<double>(in_size - 1)));
    Tap& tap = taps[o];
    tap.lo = static_cast<int64_t>(src);
    tap.hi = std::min(tap.lo + 1, in_size - 1);
    tap.frac = static_cast<float>(src - tap.lo);
  }
  return taps;
}

template <typename T>
void ResizeImpl(const SampleRef& in, int64_t height, int64_t width,
                Sample* out) {
  const int64_t in_w = in.shape[1];
  const int64_t c = in.shape[2];
  const std::vector<Tap> ys = Taps(in.shape[0], height);
  const std::vector<Tap> xs = Taps(in_w, width);
  const T* src = in.as<T>();
  T* dst = out->as<T>();
  for (int64_t y = 0; y < height; ++y) {
    const T* top = src + ys[y].lo * in_w * c;
    const T* bottom = src + ys[y].hi * in_w * c;
    const float fy = ys[y].frac;
    for (int64_t x = 0; x < width; ++x) {
      const Tap& tx = xs[x];
      for (int64_t k = 0; k < c; ++k) {
        const float a = static_cast<float>(top[tx.lo * c + k]);
        const float b = static_cast<float>(top[tx.hi * c + k]);
        const float d = static_cast<float>(bottom[tx.lo * c + k]);
        const float e = static_cast<float>(bottom[tx.hi * c + k]);
        const float upper = a + (b - a) * tx.frac;
        const float lower = d + (e - d) * tx.frac;
        const float value = upper + (lower - upper) * fy;
        if constexpr (std::is_same_v<T, uint8_t>) {
          *dst++ = static_cast<uint8_t>(
              std::min(255.0f, std::max(0.0f, std::nearbyint(value))));
        } else {
          *dst++ = value;
        }
      }
    }
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

absl::Status Resize(const SampleRef& in, int64_t height, int64_t width,
                    Sample* out) {
  absl::Status ok = ExpectImage("resize", in);
  if (ok.ok()) ok = ExpectType("resize", in, {DT_UINT8, DT_FLOAT32});
  if (!ok.ok()) return ok;
  if (height < 1 || width < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("resize: size ", height, "x", width, " is empty"));
  }
  const int64_t shape[] = {height, width, in.shape[2]};
  out->Reshape(in.type, shape);
  if (in.type == DT_UINT8) {
    ResizeImpl<uint8_t>(in, height, width, out);
  } else {
    ResizeImpl<float>(in, height, width, out);
  }
  return absl::OkStatus();
}

absl::Status PlaceCrop(int64_t in_h, int64_t in_w, int64_t height,
                       int64_t width, bool random, SampleRng* rng,
                       CropWindow* window) {
  if (height < 1 || width < 1 || height > in_h || width > in_w) {
    return absl::InvalidArgumentError(
        absl::StrCat("crop: window ", height, "x", width,
                     " does not fit in the image of ", in_h, "x", in_w));
  }
  if (random) {
    window->y = rng->Below(in_h - height + 1);
    window->x = rng->Below(in_w - width + 1);
  } else {
    window->y = (in_h - height) / 2;
    window->x = (in_w - width) / 2;
  }
  return absl::OkStatus();
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
    for (int64_t x = 0; x < w; ++x) {
      std::memcpy(dst + x * pixel, src + (w - 1 - x) * pixel, pixel);
    }
  }
  return absl::OkStatus();
}

absl::Status CropMirrorNormalize(const SampleRef& in, const CropWindow& window,
                                 int64_t height, int64_t width, bool mirror,
                                 const std::vector<float>& mean,
                                 const std::vector<float>& stddev,
                                 Sample* out) {
  absl::Status ok = ExpectImage("crop_mirror_normalize", in);
  if (ok.ok()) ok = ExpectType("crop_mirror_normalize", in, {DT_UINT8});
  if (!ok.ok()) return ok;
  const int64_t c = in.shape[2];
  auto per_channel = [&](const std::vector<float>& values, const char* what,
                         std::vector<float>* full) -> absl::Status {
    if (values.size() != 1 && static_cast<int64_t>(values.size()) != c) {
      return absl::InvalidArgumentError(absl::StrCat(
          "crop_mirror_normalize: ", what, " has ", values.size(),
          " values for an image of ", c, " channels (give 1 or ", c, ")"));
    }
    full->assign(c, values[0]);
    if (values.size() > 1) full->assign(values.begin(), values.end());
    return absl::OkStatus();
  };
  std::vector<float> m, inv;
  ok = per_channel(mean, "mean", &m);
  if (ok.ok()) ok = per_channel(stddev, "std", &inv);
  if (!ok.ok()) return ok;
  for (float& s : inv) {
    if (s == 0) {
      return absl::InvalidArgumentError(
          "crop_mirror_normalize: std has a zero");
    }
    s = 1.0f / s;
  }
  if (window.y < 0 || window.x < 0 || window.y + height > in.shape[0] ||
      window.x + width > in.shape[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("crop_mirror_normalize: window ", height, "x", width,
                     " at (", window.y, ", ", window.x,
                     ") leaves the image of ", in.shape[0], "x", in.shape[1]));
  }
  const int64_t shape[] = {c, height, width};
  out->Reshape(DT_FLOAT32, shape);
  const uint8_t* src = in.data;
  float* dst = out->as<float>();
  const int64_t in_w = in.shape[1];
  for (int64_t k = 0; k < c; ++k) {
    for (int64_t y = 0; y < height; ++y) {
      const uint8_t* row = src + ((window.y + y) * in_w + window.x) * c + k;
      float* out_row = dst + (k * height + y) * width;
      for (int64_t x = 0; x < width; ++x) {
        const int64_t from = mirror ? width - 1 - x : x;
        out_row[x] = (static_cast<float>(row[from * c]) - m[k]) * inv[k];
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CastSample(const SampleRef& in, DataType to, Sample* out) {
  out->Reshape(to, in.shape);
  const int64_t n = ShapeElemCnt(in.shape);
  return VisitDataType(in.type, [&](auto from_tag) {
    using From = typename decltype(from_tag)::type;
    return VisitDataType(to, [&](auto to_tag) {
      using To = typename decltype(to_tag)::type;
      const From* src = in.as<From>();
      To* dst = out->as<To>();
      for (int64_t i = 0; i < n; ++i) dst[i] = ConvertElement<To>(src[i]);
      return absl::OkStatus();
    });
  });
}

}  // namespace actorflow::pipeline
