#ifndef ACTORFLOW_CUDA_API_H_
#define ACTORFLOW_CUDA_API_H_

#include <cstddef>
#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/version.h"

// The few CUDA runtime calls the memory layer needs, behind absl::Status.
// Two implementations: cuda_api_cuda.cc (built when a toolkit is found) and
// cuda_api_stub.cc (CPU-only builds), where every call reports that the build
// has no CUDA. Nothing here crashes on a machine without a GPU or driver.
namespace actorflow {

// OK when CUDA device `index` can run work; otherwise why not. Sessions and
// pipelines take one (tests pass their own); the default is
// cuda::DeviceAvailable.
using DeviceProbe = std::function<absl::Status(int index)>;

}  // namespace actorflow

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace cuda {

// An opaque cudaStream_t and cudaEvent_t.
using StreamHandle = void*;
using EventHandle = void*;

bool BuiltWithCuda();
// True in --config=emulated_gpu builds, whose "devices" are host threads
// (memory/cuda_api_emulated.cc): timings there are not GPU timings.
bool EmulatedDevice();

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

// Any two of host, pinned and device memory (unified addressing): queued
// on `stream`, complete when the stream reaches it.
absl::Status MemcpyAsync(void* dst, const void* src, size_t bytes,
                         StreamHandle stream);
// Waits for all work on the device, every stream included.
absl::Status DeviceSynchronize(int device_index);
// Makes `device_index` the calling thread's current device.
absl::Status SetDevice(int device_index);

// Non-blocking stream (no implicit ordering with the legacy stream 0).
absl::StatusOr<StreamHandle> StreamCreate(int device_index);
absl::Status StreamSynchronize(int device_index, StreamHandle stream);
void StreamDestroy(int device_index, StreamHandle stream);

// Events without timing (cheaper to record and wait on).
absl::StatusOr<EventHandle> EventCreate(int device_index);
// Marks the point after everything queued on `stream` so far.
absl::Status EventRecord(EventHandle event, StreamHandle stream);
// Blocks until the event has happened; reports an error of the work before
// it (asynchronous CUDA errors are sticky: every later call reports them).
absl::Status EventSynchronize(EventHandle event);
void EventDestroy(EventHandle event);

// Events that keep the device's time when the stream reached them (the
// engine's profiler times device work with a pair). Destroy with
// EventDestroy.
absl::StatusOr<EventHandle> TimingEventCreate(int device_index);
// Device time from `start` to `end`, two recorded timing events, in
// nanoseconds (CUDA resolves about half a microsecond). Waits for `end`.
absl::StatusOr<int64_t> EventElapsedNs(EventHandle start, EventHandle end);

// The error of the last kernel launch on this thread, with `what` in front;
// OK if it succeeded. Clears it.
absl::Status LastLaunchError(const char* what);

}  // namespace cuda
ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_CUDA_API_H_
