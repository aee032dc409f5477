#ifndef ACTORFLOW_KERNELS_CONVERT_H_
#define ACTORFLOW_KERNELS_CONVERT_H_

#include <cstdint>
#include <limits>
#include <type_traits>

// How `cast` (and `source`, for its fill value) turn one element type into
// another, the same on the host and in device code:
//   to bool:                 nonzero is true (NaN too)
//   to a floating type:      the nearest value (C++ conversion)
//   floating to integer:     truncated toward zero, saturated at the type's
//                            range; NaN is 0
//   integer/bool to integer: two's-complement wrap-around (C++20), as
//                            NumPy's astype does
#if defined(__CUDACC__)
#define ACTORFLOW_HOST_DEVICE __host__ __device__
#else
#define ACTORFLOW_HOST_DEVICE
#endif

namespace actorflow::internal {

template <typename To, typename From>
ACTORFLOW_HOST_DEVICE inline To ConvertElement(From value) {
  if constexpr (std::is_same_v<To, bool>) {
    return value != From(0);
  } else if constexpr (std::is_floating_point_v<To>) {
    return static_cast<To>(value);
  } else if constexpr (std::is_floating_point_v<From>) {
    if (value != value) return To(0);  // NaN
    // The bounds as From: the largest To is not exactly representable in
    // float for 32- and 64-bit types, so compare against 2^bits instead.
    constexpr From kMin = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From kPastMax =
        static_cast<From>(std::numeric_limits<To>::max() / 2 + 1) * From(2);
    if (value <= kMin) return std::numeric_limits<To>::min();
    if (value >= kPastMax) return std::numeric_limits<To>::max();
    return static_cast<To>(value);
  } else {
    return static_cast<To>(value);
  }
}

}  // namespace actorflow::internal

#endif  // ACTORFLOW_KERNELS_CONVERT_H_
