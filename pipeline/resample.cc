#include "pipeline/resample.h"

#include <algorithm>
#include <cmath>

namespace actorflow::internal::pipeline {

FilterTaps TriangleTaps(int64_t in_size, int64_t out_size, int64_t first,
                        int64_t count, int64_t origin) {
  const double scale = static_cast<double>(in_size) / out_size;
  // Shrinking by s: the filter is s times wider (and s times lower).
  const double widen = std::max(scale, 1.0);
  const double support = widen;  // the triangle's half width
  FilterTaps taps;
  taps.width = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  taps.begin.resize(count);
  taps.size.resize(count);
  taps.weights.assign(count * taps.width, 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    const double center = (first + i + 0.5) * scale;
    // The source pixels whose centres lie within the support.
    const int64_t lo = std::max<int64_t>(
        0, static_cast<int64_t>(std::floor(center - support + 0.5)));
    const int64_t hi = std::min<int64_t>(
        in_size, static_cast<int64_t>(std::floor(center + support + 0.5)));
    double total = 0;
    std::vector<double> w;
    for (int64_t x = lo; x < hi; ++x) {
      const double d = std::abs((x + 0.5 - center) / widen);
      w.push_back(d < 1 ? 1 - d : 0);
      total += w.back();
    }
    // A pixel exactly at the support's edge weighs 0; at least one weighs
    // more (the nearest lies within half a pixel of the centre).
    float* to = taps.weights.data() + i * taps.width;
    for (size_t k = 0; k < w.size(); ++k) {
      to[k] = static_cast<float>(w[k] / total);
    }
    taps.begin[i] = lo - origin;
    taps.size[i] = hi - lo;
  }
  return taps;
}

namespace {

template <typename T>
T Store(float value) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    // Rounded half up (the value is clamped non-negative first).
    return static_cast<uint8_t>(
        static_cast<int>(std::min(255.0f, std::max(0.0f, value)) + 0.5f));
  } else {
    return value;
  }
}

template <typename T>
void Resample(const SampleRef& in, const ResizeArea& area, int64_t height,
              int64_t width, const CropWindow& window, int64_t out_h,
              int64_t out_w, Sample* out) {
  const int64_t in_w = in.shape[1], c = in.shape[2];
  const FilterTaps ys =
      TriangleTaps(area.full_h, height, window.y, out_h, area.y);
  const FilterTaps xs =
      TriangleTaps(area.full_w, width, window.x, out_w, area.x);
  // The held rows the window reads, each filtered along the width once.
  int64_t r0 = in.shape[0], r1 = 0;
  for (int64_t y = 0; y < out_h; ++y) {
    r0 = std::min(r0, ys.begin[y]);
    r1 = std::max(r1, ys.begin[y] + ys.size[y]);
  }
  const int64_t row_len = out_w * c;
  std::vector<float> rows(std::max<int64_t>(0, r1 - r0) * row_len);
  const T* src = in.as<T>();
  for (int64_t r = r0; r < r1; ++r) {
    const T* from = src + r * in_w * c;
    float* to = rows.data() + (r - r0) * row_len;
    for (int64_t x = 0; x < out_w; ++x) {
      const float* w = xs.weights.data() + x * xs.width;
      const T* p = from + xs.begin[x] * c;
      for (int64_t k = 0; k < c; ++k) {
        float sum = 0;
        for (int64_t j = 0; j < xs.size[x]; ++j) {
          sum += w[j] * static_cast<float>(p[j * c + k]);
        }
        to[x * c + k] = sum;
      }
    }
  }
  T* dst = out->as<T>();
  std::vector<float> sum(row_len);
  for (int64_t y = 0; y < out_h; ++y) {
    const float* w = ys.weights.data() + y * ys.width;
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t j = 0; j < ys.size[y]; ++j) {
      const float* row = rows.data() + (ys.begin[y] + j - r0) * row_len;
      for (int64_t i = 0; i < row_len; ++i) sum[i] += w[j] * row[i];
    }
    for (int64_t i = 0; i < row_len; ++i) {
      dst[y * row_len + i] = Store<T>(sum[i]);
    }
  }
}

}  // namespace

void ResampleWindow(const SampleRef& in, const ResizeArea& area, int64_t height,
                    int64_t width, const CropWindow& window, int64_t out_h,
                    int64_t out_w, Sample* out) {
  if (in.type == DT_UINT8) {
    Resample<uint8_t>(in, area, height, width, window, out_h, out_w, out);
  } else {
    Resample<float>(in, area, height, width, window, out_h, out_w, out);
  }
}

}  // namespace actorflow::internal::pipeline
