#ifndef ACTORFLOW_MEMORY_CUDA_API_H_
#define ACTORFLOW_MEMORY_CUDA_API_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// The few CUDA runtime calls the memory layer needs, behind absl::Status.
// Two implementations: cuda_api_cuda.cc (built when a toolkit is found) and
// cuda_api_stub.cc (CPU-only builds), where every call reports that the build
// has no CUDA. Nothing here crashes on a machine without a GPU or driver.
namespace actorflow::cuda {

// An opaque cudaStream_t.
using StreamHandle = void*;

bool BuiltWithCuda();

// OK when `device_index` names a device this process can use; otherwise says
// why (no CUDA in the build, no driver, index out of range, ...). Cached.
absl::Status DeviceAvailable(int device_index);
absl::StatusOr<int> DeviceCount();

absl::StatusOr<void*> DeviceMalloc(int device_index, size_t bytes);
void DeviceFree(int device_index, void* ptr);
// Page-locked host memory, so device copies from it can be asynchronous.
absl::StatusOr<void*> PinnedMalloc(size_t bytes);
void PinnedFree(void* ptr);

absl::Status MemcpyHostToDevice(int device_index, void* dst, const void* src,
                                size_t bytes);
absl::Status MemcpyDeviceToHost(int device_index, void* dst, const void* src,
                                size_t bytes);
absl::Status MemcpyHostToDeviceAsync(int device_index, void* dst,
                                     const void* src, size_t bytes,
                                     StreamHandle stream);
absl::Status DeviceMemset(int device_index, void* ptr, int value, size_t bytes);

absl::StatusOr<StreamHandle> StreamCreate(int device_index);
absl::Status StreamSynchronize(int device_index, StreamHandle stream);
void StreamDestroy(int device_index, StreamHandle stream);

}  // namespace actorflow::cuda

#endif  // ACTORFLOW_MEMORY_CUDA_API_H_
