#include "pipeline/resample.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>

#include "pipeline/pixel_store.h"

#if defined(__SSE2__)
#include <immintrin.h>
#endif

namespace actorflow::internal::pipeline {

namespace {

// The source pixels [*lo, *hi) whose centres lie within output i's
// support (`scale` = in_size / out_size; the support's half width is the
// scale, at least 1). Both grow with i.
void TriangleSpan(int64_t in_size, double scale, int64_t i, int64_t* lo,
                  int64_t* hi) {
  const double support = std::max(scale, 1.0);
  const double center = (i + 0.5) * scale;
  *lo = std::max<int64_t>(
      0, static_cast<int64_t>(std::floor(center - support + 0.5)));
  *hi = std::min<int64_t>(
      in_size, static_cast<int64_t>(std::floor(center + support + 0.5)));
}

}  // namespace

void TriangleSourceRange(int64_t in_size, int64_t out_size, int64_t first,
                         int64_t count, int64_t* begin, int64_t* end) {
  const double scale = static_cast<double>(in_size) / out_size;
  int64_t ignored;
  TriangleSpan(in_size, scale, first, begin, &ignored);
  TriangleSpan(in_size, scale, first + count - 1, &ignored, end);
}

FilterTaps TriangleTaps(int64_t in_size, int64_t out_size, int64_t first,
                        int64_t count, int64_t origin) {
  const double scale = static_cast<double>(in_size) / out_size;
  // Shrinking by s: the filter is s times wider (and s times lower).
  const double widen = std::max(scale, 1.0);
  FilterTaps taps;
  taps.begin.resize(count);
  taps.size.resize(count);
  std::vector<int64_t> lo(count), hi(count);
  for (int64_t i = 0; i < count; ++i) {
    TriangleSpan(in_size, scale, first + i, &lo[i], &hi[i]);
    taps.width = std::max(taps.width, hi[i] - lo[i]);
  }
  // As wide as the widest output's taps, and no wider: the row passes run
  // every output over `width` taps, and a tap more, of weight 0, would
  // cost them a quarter more time).
  taps.width = std::max<int64_t>(taps.width, 1);
  taps.weights.assign(count * taps.width, 0.0f);
  for (int64_t i = 0; i < count; ++i) {
    const double center = (first + i + 0.5) * scale;
    // Raw weights first, then normalized. A pixel exactly at the
    // support's edge weighs 0; the nearest weighs more (its centre lies
    // within half a pixel of the output's).
    float* to = taps.weights.data() + i * taps.width;
    double total = 0;
    for (int64_t x = lo[i]; x < hi[i]; ++x) {
      const double d = std::abs((x + 0.5 - center) / widen);
      to[x - lo[i]] = static_cast<float>(d < 1 ? 1 - d : 0);
      total += to[x - lo[i]];
    }
    for (int64_t k = 0; k < hi[i] - lo[i]; ++k) {
      to[k] = static_cast<float>(to[k] / total);
    }
    taps.begin[i] = lo[i] - origin;
    taps.size[i] = hi[i] - lo[i];
  }
  return taps;
}

namespace {

// One held row filtered along the width: to[x * c + k].
template <typename T>
void FilterRow(const T* from, const FilterTaps& xs, int64_t c, int64_t out_w,
               float* to) {
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

#if defined(__SSE2__)
// The RGB row passes' floats: bytes [b0, b1) of a row, the ones its taps
// read, held from `f` (RowFloatsFor sizes them; the pass converts).
struct RowFloats {
  int64_t b0 = 0, b1 = 0;
  float* f = nullptr;
};
RowFloats RowFloatsFor(const FilterTaps& xs, int64_t out_w,
                       std::vector<float>* floats) {
  RowFloats row;
  row.b0 = xs.begin[0] * 3;
  row.b1 = (xs.begin[out_w - 1] + xs.size[out_w - 1]) * 3;
  // Room for every pixel's full `width` taps and the fourth lane of the
  // last; past b1 zeros, since a zero weight times garbage may be NaN.
  const int64_t room = row.b1 - row.b0 + xs.width * 3 + 1;
  if (static_cast<int64_t>(floats->size()) < room) floats->resize(room);
  row.f = floats->data();
  std::fill(row.f + (row.b1 - row.b0), row.f + room, 0.0f);
  return row;
}

// Tap j of output pixel x: its weight times the three values (and the
// next one) it reads.
__attribute__((always_inline)) inline __m128 RgbTap(const RowFloats& row,
                                                    const FilterTaps& xs,
                                                    int64_t x, int64_t j) {
  return _mm_mul_ps(_mm_set1_ps(xs.weights[x * xs.width + j]),
                    _mm_loadu_ps(row.f + (xs.begin[x] * 3 - row.b0) + j * 3));
}

// Output pixel x alone: its taps summed in order, one vector.
__m128 RgbPixelSum(const RowFloats& row, const FilterTaps& xs, int64_t x) {
  __m128 sum = _mm_setzero_ps();
  for (int64_t j = 0; j < xs.width; ++j) {
    sum = _mm_add_ps(sum, RgbTap(row, xs, x, j));
  }
  return sum;
}

// FilterRow for RGB bytes: the bytes the taps read become floats first
// (in `floats`), then each output pixel is one vector summed over the
// taps' `width` (the weights past a pixel's own taps are 0). Four pixels
// are summed side by side: one pixel's sum is a chain of dependent adds,
// and four independent chains keep the adder busy. Each vector's fourth
// lane (the next pixel's first value) the next pixel overwrites: `to` has a
// float of room after the row.
void FilterRowRgb(const uint8_t* from, const FilterTaps& xs, int64_t out_w,
                  std::vector<float>* floats, float* to) {
  const RowFloats row = RowFloatsFor(xs, out_w, floats);
  const int64_t b0 = row.b0, b1 = row.b1;
  float* f = row.f;
  const __m128i zero = _mm_setzero_si128();
  int64_t i = b0;
  for (; i + 16 <= b1; i += 16) {  // sixteen bytes at a time
    const __m128i bytes =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + i));
    const __m128i low = _mm_unpacklo_epi8(bytes, zero);
    const __m128i high = _mm_unpackhi_epi8(bytes, zero);
    float* at = f + (i - b0);
    _mm_storeu_ps(at, _mm_cvtepi32_ps(_mm_unpacklo_epi16(low, zero)));
    _mm_storeu_ps(at + 4, _mm_cvtepi32_ps(_mm_unpackhi_epi16(low, zero)));
    _mm_storeu_ps(at + 8, _mm_cvtepi32_ps(_mm_unpacklo_epi16(high, zero)));
    _mm_storeu_ps(at + 12, _mm_cvtepi32_ps(_mm_unpackhi_epi16(high, zero)));
  }
  for (; i < b1; ++i) f[i - b0] = static_cast<float>(from[i]);
  int64_t x = 0;
  for (; x + 4 <= out_w; x += 4) {
    __m128 s0 = _mm_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t j = 0; j < xs.width; ++j) {
      s0 = _mm_add_ps(s0, RgbTap(row, xs, x, j));
      s1 = _mm_add_ps(s1, RgbTap(row, xs, x + 1, j));
      s2 = _mm_add_ps(s2, RgbTap(row, xs, x + 2, j));
      s3 = _mm_add_ps(s3, RgbTap(row, xs, x + 3, j));
    }
    // In order: each store's fourth lane is the next one's first.
    _mm_storeu_ps(to + x * 3, s0);
    _mm_storeu_ps(to + x * 3 + 3, s1);
    _mm_storeu_ps(to + x * 3 + 6, s2);
    _mm_storeu_ps(to + x * 3 + 9, s3);
  }
  for (; x < out_w; ++x) _mm_storeu_ps(to + x * 3, RgbPixelSum(row, xs, x));
}

// The vertical pass for bytes: output row `dst` (row_len values) from the
// filtered rows `first` (the first tap's), `stride` apart, weighted by
// w[0, taps), summed in registers eight values at a time and stored as
// StorePixel<uint8_t> does (ByteStore8's arithmetic, written out: through
// ByteStore8 this loop measured 7% slower, the compiler arranging it
// otherwise).
void FilterColumnBytes(const float* first, int64_t stride, const float* w,
                       int64_t taps, int64_t row_len, uint8_t* dst) {
  const __m128 zero = _mm_setzero_ps(), top = _mm_set1_ps(255.0f),
               half = _mm_set1_ps(0.5f);
  auto round = [&](__m128 v) {
    return _mm_cvttps_epi32(
        _mm_add_ps(_mm_min_ps(top, _mm_max_ps(zero, v)), half));
  };
  int64_t i = 0;
  for (; i + 8 <= row_len; i += 8) {
    __m128 low = _mm_setzero_ps(), high = low;
    for (int64_t j = 0; j < taps; ++j) {
      const __m128 wj = _mm_set1_ps(w[j]);
      const float* row = first + j * stride + i;
      low = _mm_add_ps(low, _mm_mul_ps(wj, _mm_loadu_ps(row)));
      high = _mm_add_ps(high, _mm_mul_ps(wj, _mm_loadu_ps(row + 4)));
    }
    const __m128i words = _mm_packs_epi32(round(low), round(high));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + i),
                     _mm_packus_epi16(words, words));
  }
  for (; i < row_len; ++i) {
    float sum = 0;
    for (int64_t j = 0; j < taps; ++j) sum += w[j] * first[j * stride + i];
    dst[i] = StorePixel<uint8_t>(sum);
  }
}

// The same two passes eight floats wide where the CPU has AVX2 (no FMA:
// each value is the same multiplies and adds in the same order, so the
// results are the SSE2 paths' bit for bit).
//
// The row pass takes two neighbouring output pixels a vector, whose lanes
// 0-2 and 3-5 are their six values as the output row holds them: one
// unaligned load of eight floats at source pixel `base` + t gives lanes 0-2
// pixel base + t and lanes 3-5 pixel base + t + 1, so tap t of the pair
// weighs pixel base + t for the first output and base + t + 1 for the
// second. Each output's own taps sit at their offset from `base` in the
// pair's run of taps, zero weights around them: a zero weight adds +0 to a
// sum of non-negative terms, so every value is its taps' sum in order, as
// the SSE2 pass makes it.
struct RowPairs {
  std::vector<int64_t> base;   // per pair: its first tap's source pixel
  int64_t taps = 0;            // per pair, the most any needs
  std::vector<float> weights;  // per pair and tap: eight lanes
  int64_t first_pixel = 0;     // the least pixel a load reads
  int64_t end_pixel = 0;       // past the last pixel a load reaches
};

RowPairs MakeRowPairs(const FilterTaps& xs, int64_t out_w) {
  RowPairs pairs;
  const int64_t n = out_w / 2;
  // Output x's taps start at base + first[0], output x + 1's at base +
  // first[1] (the lanes add 1).
  std::vector<std::array<int64_t, 2>> firsts(n);
  pairs.base.resize(n);
  for (int64_t p = 0; p < n; ++p) {
    const int64_t x = 2 * p;
    pairs.base[p] = std::min(xs.begin[x], xs.begin[x + 1] - 1);
    firsts[p] = {xs.begin[x] - pairs.base[p],
                 xs.begin[x + 1] - 1 - pairs.base[p]};
    pairs.taps = std::max(
        {pairs.taps, firsts[p][0] + xs.size[x], firsts[p][1] + xs.size[x + 1]});
  }
  pairs.weights.assign(n * pairs.taps * 8, 0.0f);
  pairs.first_pixel = out_w > 0 ? xs.begin[0] : 0;
  for (int64_t p = 0; p < n; ++p) {
    float* w = pairs.weights.data() + p * pairs.taps * 8;
    for (int k = 0; k < 2; ++k) {
      const int64_t x = 2 * p + k;
      for (int64_t j = 0; j < xs.size[x]; ++j) {
        for (int lane = 3 * k; lane < 3 * k + 3; ++lane) {
          w[(firsts[p][k] + j) * 8 + lane] = xs.weights[x * xs.width + j];
        }
      }
    }
    pairs.first_pixel = std::min(pairs.first_pixel, pairs.base[p]);
    // A load at pixel base + t reads eight floats: into pixel base + t + 2.
    pairs.end_pixel = std::max(pairs.end_pixel, pairs.base[p] + pairs.taps + 2);
  }
  return pairs;
}

// Eight values as StorePixel<uint8_t> rounds them, to `to`[0, 8).
__attribute__((target("avx2"), always_inline)) inline void StoreBytes8(
    __m256 v, uint8_t* to) {
  const __m256 clamped = _mm256_min_ps(_mm256_set1_ps(255.0f),
                                       _mm256_max_ps(_mm256_setzero_ps(), v));
  const __m256i ints =
      _mm256_cvttps_epi32(_mm256_add_ps(clamped, _mm256_set1_ps(0.5f)));
  const __m128i words = _mm_packs_epi32(_mm256_castsi256_si128(ints),
                                        _mm256_extracti128_si256(ints, 1));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(to),
                   _mm_packus_epi16(words, words));
}

// `sum` plus a pair's tap t: its eight weights times the eight floats from
// its base's pixel t on.
__attribute__((target("avx2"), always_inline)) inline __m256 PairTap(
    __m256 sum, const float* weights, const float* values, int64_t t) {
  return _mm256_add_ps(sum, _mm256_mul_ps(_mm256_loadu_ps(weights + t * 8),
                                          _mm256_loadu_ps(values + t * 3)));
}

// The row pass for RGB bytes: `to` has two floats of room after the row
// (a pair's store writes eight).
__attribute__((target("avx2"))) void FilterRowRgbAvx2(
    const uint8_t* from, int64_t in_w, const FilterTaps& xs,
    const RowPairs& pairs, int64_t out_w, std::vector<float>* floats,
    float* to) {
  // The row's floats from pixel `origin` on, zeros where a load reaches
  // past the row's own pixels (a zero weight times them must be 0, not
  // NaN).
  const int64_t origin = pairs.first_pixel;
  const int64_t end = std::max(
      pairs.end_pixel, out_w > 0 ? xs.begin[out_w - 1] + xs.width + 2 : origin);
  if (static_cast<int64_t>(floats->size()) < (end - origin) * 3) {
    floats->resize((end - origin) * 3);
  }
  float* f = floats->data();
  const int64_t b0 = std::max<int64_t>(0, origin) * 3;
  const int64_t b1 = std::min(in_w, end) * 3;
  std::fill(f, f + (b0 - origin * 3), 0.0f);
  int64_t i = b0;
  for (; i + 8 <= b1; i += 8) {
    const __m128i bytes =
        _mm_loadl_epi64(reinterpret_cast<const __m128i*>(from + i));
    _mm256_storeu_ps(f + (i - origin * 3),
                     _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes)));
  }
  for (; i < b1; ++i) f[i - origin * 3] = static_cast<float>(from[i]);
  std::fill(f + (b1 - origin * 3), f + (end - origin) * 3, 0.0f);
  // Four pairs side by side: each sum is a chain of dependent adds, and
  // four independent chains keep the adder busy.
  const int64_t n = out_w / 2, taps = pairs.taps;
  auto values = [&](int64_t p) { return f + (pairs.base[p] - origin) * 3; };
  auto weights = [&](int64_t p) { return pairs.weights.data() + p * taps * 8; };
  int64_t p = 0;
  for (; p + 4 <= n; p += 4) {
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    for (int64_t t = 0; t < taps; ++t) {
      s0 = PairTap(s0, weights(p), values(p), t);
      s1 = PairTap(s1, weights(p + 1), values(p + 1), t);
      s2 = PairTap(s2, weights(p + 2), values(p + 2), t);
      s3 = PairTap(s3, weights(p + 3), values(p + 3), t);
    }
    // In order: each store's last two lanes are the next one's first.
    _mm256_storeu_ps(to + p * 6, s0);
    _mm256_storeu_ps(to + p * 6 + 6, s1);
    _mm256_storeu_ps(to + p * 6 + 12, s2);
    _mm256_storeu_ps(to + p * 6 + 18, s3);
  }
  for (; p < n; ++p) {
    __m256 sum = _mm256_setzero_ps();
    for (int64_t t = 0; t < taps; ++t) {
      sum = PairTap(sum, weights(p), values(p), t);
    }
    _mm256_storeu_ps(to + p * 6, sum);
  }
  if (out_w % 2 == 1) {
    // The last pixel alone, as FilterRowRgb sums one (`f` starts at pixel
    // `origin`).
    const RowFloats row{origin * 3, b1, f};
    _mm_storeu_ps(to + (out_w - 1) * 3, RgbPixelSum(row, xs, out_w - 1));
  }
}

__attribute__((target("avx2"))) void FilterColumnBytesAvx2(
    const float* first, int64_t stride, const float* w, int64_t taps,
    int64_t row_len, uint8_t* dst) {
  int64_t i = 0;
  for (; i + 16 <= row_len; i += 16) {
    __m256 low = _mm256_setzero_ps(), high = low;
    for (int64_t j = 0; j < taps; ++j) {
      const __m256 wj = _mm256_set1_ps(w[j]);
      const float* row = first + j * stride + i;
      low = _mm256_add_ps(low, _mm256_mul_ps(wj, _mm256_loadu_ps(row)));
      high = _mm256_add_ps(high, _mm256_mul_ps(wj, _mm256_loadu_ps(row + 8)));
    }
    StoreBytes8(low, dst + i);
    StoreBytes8(high, dst + i + 8);
  }
  // The last values as the SSE2 pass makes them (the same per value).
  FilterColumnBytes(first + i, stride, w, taps, row_len - i, dst + i);
}

bool HasAvx2() {
  static const bool avx2 = __builtin_cpu_supports("avx2");
  return avx2;
}
#endif

// A resample's taps along both axes, and, with `pairs`, the width's as
// FilterRowRgbAvx2 reads them.
struct ResampleTaps {
  std::array<int64_t, 10> geometry{};  // what they were made for
  bool pairs = false;
  FilterTaps ys, xs;
#if defined(__SSE2__)
  RowPairs row_pairs;
#endif
};

// The taps of this thread's last resample if it had the same geometry,
// else new ones: a pipeline that resizes images of one size to one size (a
// validation recipe) would otherwise make the same taps for every image
// (1.6 % of such a pipeline's time).
const ResampleTaps& TapsFor(const ResizeArea& area, int64_t height,
                            int64_t width, const CropWindow& window,
                            int64_t out_h, int64_t out_w, bool pairs) {
  thread_local ResampleTaps last;
  thread_local bool made = false;
  const std::array<int64_t, 10> geometry = {
      area.full_h, height, window.y, out_h, area.y,
      area.full_w, width,  window.x, out_w, area.x};
  if (made && last.geometry == geometry && last.pairs == pairs) return last;
  last.geometry = geometry;
  last.pairs = pairs;
  last.ys = TriangleTaps(area.full_h, height, window.y, out_h, area.y);
  last.xs = TriangleTaps(area.full_w, width, window.x, out_w, area.x);
#if defined(__SSE2__)
  last.row_pairs = pairs ? MakeRowPairs(last.xs, out_w) : RowPairs();
#endif
  made = true;
  return last;
}

template <typename T>
void Resample(const SampleRef& in, const ResizeArea& area, int64_t height,
              int64_t width, const CropWindow& window, int64_t out_h,
              int64_t out_w, Sample* out) {
  const int64_t in_w = in.shape[1], c = in.shape[2];
#if defined(__SSE2__)
  const bool avx2 = std::is_same_v<T, uint8_t> && HasAvx2();
#else
  constexpr bool avx2 = false;
#endif
  const ResampleTaps& taps =
      TapsFor(area, height, width, window, out_h, out_w, avx2 && c == 3);
  const FilterTaps& ys = taps.ys;
  const FilterTaps& xs = taps.xs;
  // The held rows the window reads, each filtered along the width once.
  int64_t r0 = in.shape[0], r1 = 0;
  for (int64_t y = 0; y < out_h; ++y) {
    r0 = std::min(r0, ys.begin[y]);
    r1 = std::max(r1, ys.begin[y] + ys.size[y]);
  }
  // Two floats of room after each held row: FilterRowRgbAvx2.
  const int64_t row_len = out_w * c, stride = row_len + 2;
  // Every held row is written before it is read: no zeroing (it was 4% of
  // a validation pipeline's time).
  std::unique_ptr<float[]> rows(
      new float[std::max<int64_t>(0, r1 - r0) * stride]);
  std::vector<float> floats;
  const T* src = in.as<T>();
  for (int64_t r = r0; r < r1; ++r) {
    const T* from = src + r * in_w * c;
    float* to = rows.get() + (r - r0) * stride;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, uint8_t>) {
      if (c == 3) {
        if (avx2) {
          FilterRowRgbAvx2(from, in_w, xs, taps.row_pairs, out_w, &floats, to);
        } else {
          FilterRowRgb(from, xs, out_w, &floats, to);
        }
        continue;
      }
    }
#endif
    FilterRow(from, xs, c, out_w, to);
  }
  // Along the height: each output row a weighted sum of filtered rows.
  T* dst = out->as<T>();
  std::vector<float> sum(row_len);
  for (int64_t y = 0; y < out_h; ++y) {
    const float* w = ys.weights.data() + y * ys.width;
    const float* first = rows.get() + (ys.begin[y] - r0) * stride;
#if defined(__SSE2__)
    if constexpr (std::is_same_v<T, uint8_t>) {
      (avx2 ? FilterColumnBytesAvx2 : FilterColumnBytes)(
          first, stride, w, ys.size[y], row_len, dst + y * row_len);
      continue;
    }
#endif
    std::fill(sum.begin(), sum.end(), 0.0f);
    for (int64_t j = 0; j < ys.size[y]; ++j) {
      const float* row = first + j * stride;
      for (int64_t i = 0; i < row_len; ++i) sum[i] += w[j] * row[i];
    }
    for (int64_t i = 0; i < row_len; ++i) {
      dst[y * row_len + i] = StorePixel<T>(sum[i]);
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
