// CPU-only builds: every device call reports that CUDA is not compiled in.
#include "actorflow/cuda_api.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace cuda {
namespace {

absl::Status NoCuda() {
  return absl::UnavailableError(
      "actorflow was built without CUDA (no toolkit at $CUDA_PATH or "
      "/usr/local/cuda when it was built, or --config=nocuda)");
}

}  // namespace

bool BuiltWithCuda() { return false; }
bool EmulatedDevice() { return false; }
absl::Status DeviceAvailable(int) { return NoCuda(); }
absl::StatusOr<int> DeviceCount() { return NoCuda(); }
absl::StatusOr<void*> DeviceMalloc(int, size_t) { return NoCuda(); }
void DeviceFree(int, void*) {}
absl::StatusOr<void*> PinnedMalloc(size_t) { return NoCuda(); }
void PinnedFree(void*) {}
absl::Status MemcpyHostToDevice(int, void*, const void*, size_t) {
  return NoCuda();
}
absl::Status MemcpyDeviceToHost(int, void*, const void*, size_t) {
  return NoCuda();
}
absl::Status MemcpyHostToDeviceAsync(int, void*, const void*, size_t,
                                     StreamHandle) {
  return NoCuda();
}
absl::Status DeviceMemset(int, void*, int, size_t) { return NoCuda(); }
absl::Status MemcpyAsync(void*, const void*, size_t, StreamHandle) {
  return NoCuda();
}
absl::Status DeviceSynchronize(int) { return NoCuda(); }
absl::Status SetDevice(int) { return NoCuda(); }
absl::StatusOr<StreamHandle> StreamCreate(int) { return NoCuda(); }
absl::Status StreamSynchronize(int, StreamHandle) { return NoCuda(); }
void StreamDestroy(int, StreamHandle) {}
absl::StatusOr<EventHandle> EventCreate(int) { return NoCuda(); }
absl::Status EventRecord(EventHandle, StreamHandle) { return NoCuda(); }
absl::Status EventSynchronize(EventHandle) { return NoCuda(); }
void EventDestroy(EventHandle) {}
absl::StatusOr<EventHandle> TimingEventCreate(int) { return NoCuda(); }
absl::StatusOr<int64_t> EventElapsedNs(EventHandle, EventHandle) {
  return NoCuda();
}
absl::Status LastLaunchError(const char*) { return NoCuda(); }

}  // namespace cuda
ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
