// Builds with a CUDA toolkit: thin wrappers over the CUDA runtime.
#include <cuda_runtime_api.h>

#include "absl/strings/str_cat.h"
#include "actorflow/cuda_api.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace cuda {
namespace {

absl::Status FromCuda(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(what, ": ", cudaGetErrorString(err),
                                          " (", cudaGetErrorName(err), ")"));
}

// Device memory calls act on the calling thread's current device.
absl::Status UseDevice(int device_index) {
  absl::Status available = DeviceAvailable(device_index);
  if (!available.ok()) return available;
  return FromCuda(cudaSetDevice(device_index), "cudaSetDevice");
}

}  // namespace

bool BuiltWithCuda() { return true; }
bool EmulatedDevice() { return false; }

absl::StatusOr<int> DeviceCount() {
  // Asked once: without a driver the answer never changes, and each failing
  // call costs a driver probe.
  static const absl::StatusOr<int> count = []() -> absl::StatusOr<int> {
    int n = 0;
    cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      // Clear the "last error" so later, unrelated checks start clean.
      cudaGetLastError();
      return absl::UnavailableError(
          absl::StrCat("no usable CUDA device: ", cudaGetErrorString(err)));
    }
    return n;
  }();
  return count;
}

absl::Status DeviceAvailable(int device_index) {
  absl::StatusOr<int> count = DeviceCount();
  if (!count.ok()) return count.status();
  if (device_index < 0 || device_index >= *count) {
    return absl::UnavailableError(absl::StrCat(
        "CUDA device ", device_index, " does not exist (this machine has ",
        *count, " device", *count == 1 ? "" : "s", ")"));
  }
  return absl::OkStatus();
}

absl::StatusOr<void*> DeviceMalloc(int device_index, size_t bytes) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  void* ptr = nullptr;
  status = FromCuda(cudaMalloc(&ptr, bytes),
                    absl::StrCat("cudaMalloc(", bytes, " bytes)").c_str());
  if (!status.ok()) return status;
  return ptr;
}

void DeviceFree(int device_index, void* ptr) {
  if (UseDevice(device_index).ok()) cudaFree(ptr);
}

absl::StatusOr<void*> PinnedMalloc(size_t bytes) {
  absl::StatusOr<int> count = DeviceCount();
  if (!count.ok()) return count.status();
  void* ptr = nullptr;
  absl::Status status =
      FromCuda(cudaMallocHost(&ptr, bytes),
               absl::StrCat("cudaMallocHost(", bytes, " bytes)").c_str());
  if (!status.ok()) return status;
  return ptr;
}

void PinnedFree(void* ptr) { cudaFreeHost(ptr); }

absl::Status MemcpyHostToDevice(int device_index, void* dst, const void* src,
                                size_t bytes) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  return FromCuda(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice),
                  "cudaMemcpy host to device");
}

absl::Status MemcpyDeviceToHost(int device_index, void* dst, const void* src,
                                size_t bytes) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  return FromCuda(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost),
                  "cudaMemcpy device to host");
}

absl::Status MemcpyHostToDeviceAsync(int device_index, void* dst,
                                     const void* src, size_t bytes,
                                     StreamHandle stream) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  return FromCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                                  static_cast<cudaStream_t>(stream)),
                  "cudaMemcpyAsync host to device");
}

absl::Status DeviceMemset(int device_index, void* ptr, int value,
                          size_t bytes) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  return FromCuda(cudaMemset(ptr, value, bytes), "cudaMemset");
}

absl::Status MemcpyAsync(void* dst, const void* src, size_t bytes,
                         StreamHandle stream) {
  return FromCuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                                  static_cast<cudaStream_t>(stream)),
                  "cudaMemcpyAsync");
}

absl::Status DeviceSynchronize(int device_index) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  return FromCuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
}

absl::Status SetDevice(int device_index) { return UseDevice(device_index); }

absl::StatusOr<StreamHandle> StreamCreate(int device_index) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  cudaStream_t stream = nullptr;
  status = FromCuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
                    "cudaStreamCreate");
  if (!status.ok()) return status;
  return static_cast<StreamHandle>(stream);
}

absl::Status StreamSynchronize(int device_index, StreamHandle stream) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  return FromCuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)),
                  "cudaStreamSynchronize");
}

void StreamDestroy(int device_index, StreamHandle stream) {
  if (UseDevice(device_index).ok()) {
    cudaStreamDestroy(static_cast<cudaStream_t>(stream));
  }
}

absl::StatusOr<EventHandle> EventCreate(int device_index) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  cudaEvent_t event = nullptr;
  status = FromCuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming),
                    "cudaEventCreate");
  if (!status.ok()) return status;
  return static_cast<EventHandle>(event);
}

absl::Status EventRecord(EventHandle event, StreamHandle stream) {
  return FromCuda(cudaEventRecord(static_cast<cudaEvent_t>(event),
                                  static_cast<cudaStream_t>(stream)),
                  "cudaEventRecord");
}

absl::Status EventSynchronize(EventHandle event) {
  return FromCuda(cudaEventSynchronize(static_cast<cudaEvent_t>(event)),
                  "cudaEventSynchronize");
}

void EventDestroy(EventHandle event) {
  cudaEventDestroy(static_cast<cudaEvent_t>(event));
}

absl::StatusOr<EventHandle> TimingEventCreate(int device_index) {
  absl::Status status = UseDevice(device_index);
  if (!status.ok()) return status;
  cudaEvent_t event = nullptr;
  status = FromCuda(cudaEventCreate(&event), "cudaEventCreate");
  if (!status.ok()) return status;
  return static_cast<EventHandle>(event);
}

absl::StatusOr<int64_t> EventElapsedNs(EventHandle start, EventHandle end) {
  absl::Status status = EventSynchronize(end);
  if (!status.ok()) return status;
  float ms = 0;
  status = FromCuda(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start),
                                         static_cast<cudaEvent_t>(end)),
                    "cudaEventElapsedTime");
  if (!status.ok()) return status;
  return static_cast<int64_t>(static_cast<double>(ms) * 1e6);
}

absl::Status LastLaunchError(const char* what) {
  return FromCuda(cudaGetLastError(), what);
}

}  // namespace cuda
ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
