#ifndef ACTORFLOW_KERNELS_GPU_ELEM_VISIT_H_
#define ACTORFLOW_KERNELS_GPU_ELEM_VISIT_H_

#include <cstdint>

#include "kernels/gpu/launch.h"

// VisitElemType(type, fn): fn(T{}) with T the C++ type of an ElemType, for
// the launch functions (nvcc and the emulated device alike; no protobuf).
namespace actorflow::internal::gpu {

template <typename Fn>
void VisitElemType(ElemType type, Fn&& fn) {
  switch (type) {
    case kFloat64:
      return fn(double{});
    case kInt8:
      return fn(int8_t{});
    case kUInt8:
      return fn(uint8_t{});
    case kInt32:
      return fn(int32_t{});
    case kInt64:
      return fn(int64_t{});
    case kBool:
      return fn(bool{});
    default:
      return fn(float{});
  }
}

}  // namespace actorflow::internal::gpu

#endif  // ACTORFLOW_KERNELS_GPU_ELEM_VISIT_H_
