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
// StorePixel<uint8_t> eight values at a time (made once, outside the loop
// that stores: it holds the constants): max and min as the scalar's (no
// NaN reaches here).
class ByteStore8 {
 public:
  // Four values in `low`, four in `high`, to out[0, 8).
  void operator()(__m128 low, __m128 high, uint8_t* out) const {
    const __m128i words = _mm_packs_epi32(Round(low), Round(high));
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out),
                     _mm_packus_epi16(words, words));
  }

 private:
  __m128i Round(__m128 v) const {
    return _mm_cvttps_epi32(
        _mm_add_ps(_mm_min_ps(top_, _mm_max_ps(zero_, v)), half_));
  }
  const __m128 zero_ = _mm_setzero_ps();
  const __m128 top_ = _mm_set1_ps(255.0f);
  const __m128 half_ = _mm_set1_ps(0.5f);
};
#endif

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_PIXEL_STORE_H_
