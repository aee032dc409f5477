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
  __m128i masks[3][3];
  for (int k = 0; k < 3; ++k) {
    for (int v = 0; v < 3; ++v) {
      masks[k][v] =
          _mm_load_si128(reinterpret_cast<const __m128i*>(kMasks.bytes[k][v]));
    }
  }
  const __m128i reverse =
      _mm_setr_epi8(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0);
  int64_t x = 0;
  for (; x + 16 <= width; x += 16) {
    // The sixteen source pixels: x.. or, mirrored, the block that ends at
    // width - 1 - x, read left to right and reversed below.
    const uint8_t* from = row + 3 * (mirror ? width - 16 - x : x);
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from));
    const __m128i b =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 16));
    const __m128i c =
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(from + 32));
    for (int k = 0; k < 3; ++k) {
      __m128i bytes =
          _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(a, masks[k][0]),
                                    _mm_shuffle_epi8(b, masks[k][1])),
                       _mm_shuffle_epi8(c, masks[k][2]));
      if (mirror) bytes = _mm_shuffle_epi8(bytes, reverse);
      StoreNormalized<kStream>(bytes, _mm_set1_ps(mean[k]), _mm_set1_ps(inv[k]),
                               planes[k] + x);
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
  if (ssse3) {
    bool aligned = true;
    for (int k = 0; k < 3; ++k) {
      aligned = aligned && reinterpret_cast<uintptr_t>(planes[k]) % 16 == 0;
    }
    return stream && aligned ? NormalizeRgbRowSsse3<true>(row, width, mirror,
                                                          mean, inv, planes)
                             : NormalizeRgbRowSsse3<false>(row, width, mirror,
                                                           mean, inv, planes);
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
