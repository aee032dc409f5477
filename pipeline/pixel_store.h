#ifndef ACTORFLOW_PIPELINE_PIXEL_STORE_H_
#define ACTORFLOW_PIPELINE_PIXEL_STORE_H_

#include <algorithm>
#include <cstdint>
#include <type_traits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

// How every image operator stores a value it computed in float: uint8
// clamped to [0, 255] and rounded half up (clamped first, so truncating
// the value plus a half rounds it), float32 as it is.
namespace actorflow::internal::pipeline {

template <typename T>
inline T StorePixel(float value) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return static_cast<uint8_t>(
        static_cast<int>(std::min(255.0f, std::max(0.0f, value)) + 0.5f));
  } else {
    return value;
  }
}

#if defined(__SSE2__)
// StorePixel<uint8_t> of eight values (four in `low`, four in `high`) into
// out[0, 8): max and min as the scalar's (no NaN reaches here).
inline void StoreBytes8(__m128 low, __m128 high, uint8_t* out) {
  const __m128 zero = _mm_setzero_ps(), top = _mm_set1_ps(255.0f),
               half = _mm_set1_ps(0.5f);
  auto round = [&](__m128 v) {
    return _mm_cvttps_epi32(
        _mm_add_ps(_mm_min_ps(top, _mm_max_ps(zero, v)), half));
  };
  const __m128i words = _mm_packs_epi32(round(low), round(high));
  _mm_storel_epi64(reinterpret_cast<__m128i*>(out),
                   _mm_packus_epi16(words, words));
}
#endif

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_PIXEL_STORE_H_
