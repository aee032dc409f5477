#include "pipeline/normalize_rows.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace actorflow::internal::pipeline {

#if defined(__x86_64__)
namespace {

// The shuffles that gather channel k of 16 RGB pixels: their bytes span
// three vectors a, b, c (48 bytes), channel k of pixel p being byte 3p + k:
// kMasks[k][v] takes from vector v what lies in it (-1: a zero byte), and
// the three results are or-ed.
struct ChannelMasks {
  alignas(16) int8_t bytes[3][3][16];
};
constexpr ChannelMasks MakeMasks() {
  ChannelMasks m{};
  for (int k = 0; k < 3; ++k) {
    for (int v = 0; v < 3; ++v) {
      for (int p = 0; p < 16; ++p) {
        const int at = 3 * p + k - 16 * v;
        m.bytes[k][v][p] = at >= 0 && at < 16 ? static_cast<int8_t>(at) : -1;
      }
    }
  }
  return m;
}
constexpr ChannelMasks kMasks = MakeMasks();

// Channel k of the sixteen RGB pixels at `from` (48 bytes) to out[k],
// each reversed when `mirror`.
__attribute__((target("ssse3"), always_inline)) inline void Channels16(
    const uint8_t* from, bool mirror, __m128i out[3]) {
  const __m128i reverse =
      _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
  const __m128i b =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 16));
  const __m128i c =
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 32));
  for (int k = 0; k < 3; ++k) {
    auto mask = [&](int v) {
      return _mm_load_si128(
          reinterpret_cast<const __m128i*>(kMasks.bytes[k][v]));
    };
    out[k] = _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, mask(0)),
                                       _mm_shuffle_epi8(b, mask(1))),
                          _mm_shuffle_epi8(c, mask(2)));
    if (mirror) out[k] = _mm_shuffle_epi8(out[k], reverse);
  }
}

// Where output block x's sixteen source pixels start: x.. or, mirrored,
// the block that ends at width - 1 - x (read left to right, then
// reversed).
inline const uint8_t* BlockSource(const uint8_t* row, int64_t width,
                                  bool mirror, int64_t x) {
  return row + 3 * (mirror ? width - 16 - x : x);
}

// Sixteen bytes as floats, less `mean`, times `inv`, to out[0, 16):
// streamed (`out` 16-byte aligned) or stored.
template <bool kStream>
__attribute__((target("ssse3"), always_inline)) inline void StoreNormalized(
    __m128i bytes, __m128 mean, __m128 inv, float* out) {
  const __m128i zero = _mm_setzero_si128();
  const __m128i low = _mm_unpacklo_epi8(bytes, zero);
  const __m128i high = _mm_unpackhi_epi8(bytes, zero);
  const __m128i words[4] = {
      _mm_unpacklo_epi16(low, zero), _mm_unpackhi_epi16(low, zero),
      _mm_unpacklo_epi16(high, zero), _mm_unpackhi_epi16(high, zero)};
  for (int i = 0; i < 4; ++i) {
    const __m128 value = _mm_cvtepi32_ps(words[i]);
    const __m128 normalized = _mm_mul_ps(_mm_sub_ps(value, mean), inv);
    if constexpr (kStream) {
      _mm_stream_ps(out + 4 * i, normalized);
    } else {
      _mm_storeu_ps(out + 4 * i, normalized);
    }
  }
}

template <bool kStream>
__attribute__((target("ssse3"))) int64_t NormalizeRgbRowSsse3(
    const uint8_t* row, int64_t width, bool mirror, const float* mean,
    const float* inv, float* const planes[3]) {
  int64_t x = 0;
  for (; x + 16 <= width; x += 16) {
    __m128i bytes[3];
    Channels16(BlockSource(row, width, mirror, x), mirror, bytes);
    for (int k = 0; k < 3; ++k) {
      StoreNormalized<kStream>(bytes[k], _mm_set1_ps(mean[k]),
                               _mm_set1_ps(inv[k]), planes[k] + x);
    }
  }
  return x;
}

// The same eight values a vector: the same subtract and multiply per value
// (no FMA), so the same floats. Streamed stores need `out` 32-byte aligned.
template <bool kStream>
__attribute__((target("avx2"), always_inline)) inline void StoreNormalized8(
    __m128i bytes, __m256 mean, __m256 inv, float* out) {
  const __m256 value = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(bytes));
  const __m256 normalized = _mm256_mul_ps(_mm256_sub_ps(value, mean), inv);
  if constexpr (kStream) {
    _mm256_stream_ps(out, normalized);
  } else {
    _mm256_storeu_ps(out, normalized);
  }
}

template <bool kStream>
__attribute__((target("avx2"))) int64_t NormalizeRgbRowAvx2(
    const uint8_t* row, int64_t width, bool mirror, const float* mean,
    const float* inv, float* const planes[3]) {
  int64_t x = 0;
  for (; x + 16 <= width; x += 16) {
    __m128i bytes[3];
    Channels16(BlockSource(row, width, mirror, x), mirror, bytes);
    for (int k = 0; k < 3; ++k) {
      const __m256 m = _mm256_set1_ps(mean[k]), s = _mm256_set1_ps(inv[k]);
      StoreNormalized8<kStream>(bytes[k], m, s, planes[k] + x);
      StoreNormalized8<kStream>(_mm_unpackhi_epi64(bytes[k], bytes[k]), m, s,
                                planes[k] + x + 8);
    }
  }
  return x;
}

}  // namespace
#endif

int64_t NormalizeRgbRow(const uint8_t* row, int64_t width, bool mirror,
                        const float* mean, const float* inv,
                        float* const planes[3], bool stream) {
#if defined(__x86_64__)
  static const bool ssse3 = __builtin_cpu_supports("ssse3");
  static const bool avx2 = __builtin_cpu_supports("avx2");
  // Streamed stores need the planes aligned to the vector.
  auto aligned = [&](uintptr_t to) {
    bool all = true;
    for (int k = 0; k < 3; ++k) {
      all = all && reinterpret_cast<uintptr_t>(planes[k]) % to == 0;
    }
    return all;
  };
  if (avx2) {
    return stream && aligned(32) ? NormalizeRgbRowAvx2<true>(row, width, mirror,
                                                             mean, inv, planes)
                                 : NormalizeRgbRowAvx2<false>(
                                       row, width, mirror, mean, inv, planes);
  }
  if (ssse3) {
    return stream && aligned(16) ? NormalizeRgbRowSsse3<true>(
                                       row, width, mirror, mean, inv, planes)
                                 : NormalizeRgbRowSsse3<false>(
                                       row, width, mirror, mean, inv, planes);
  }
#endif
  return 0;
}

void EndStreaming() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace actorflow::internal::pipeline
