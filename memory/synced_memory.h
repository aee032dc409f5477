#ifndef ACTORFLOW_MEMORY_SYNCED_MEMORY_H_
#define ACTORFLOW_MEMORY_SYNCED_MEMORY_H_

#include <cstddef>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/cuda_api.h"
#include "memory/allocator.h"

namespace actorflow::internal {

struct SyncedMemoryOptions {
  enum class Host {
    // Pinned when a CUDA device is usable (the host copy may feed it),
    // pageable otherwise. Decided when the host buffer is first allocated.
    kAuto,
    kPageable,
    kPinned,
  };
  Host host = Host::kAuto;
  int device_index = 0;
  // Override the allocators above (tests count allocations with these).
  Allocator* host_allocator = nullptr;
  Allocator* device_allocator = nullptr;
};

// One logical buffer of size() bytes with a host copy and a device copy.
// head() says which copies are current:
//
//   UNINITIALIZED  neither side allocated yet
//   HEAD_AT_CPU    host copy is the only current one
//   HEAD_AT_GPU    device copy is the only current one
//   SYNCED         both are current
//
// Reading a side brings it up to date if the other side is newer; writing a
// side (mutable_*) makes it the only current one. Each side is allocated on
// first use and zero-filled. Every pointer is freed by the allocator that
// made it; a buffer lent through set_cpu_data is never freed.
//
// Device accessors return an error, never crash, when the build has no CUDA
// or the device is not usable; the state is then unchanged. Not thread-safe:
// the register protocol gives one actor at a time access.
class SyncedMemory {
 public:
  enum SyncedHead { UNINITIALIZED, HEAD_AT_CPU, HEAD_AT_GPU, SYNCED };

  explicit SyncedMemory(size_t size, SyncedMemoryOptions options = {});
  ~SyncedMemory();
  SyncedMemory(const SyncedMemory&) = delete;
  SyncedMemory& operator=(const SyncedMemory&) = delete;

  absl::StatusOr<const void*> cpu_data();
  absl::StatusOr<void*> mutable_cpu_data();
  absl::StatusOr<const void*> gpu_data();
  absl::StatusOr<void*> mutable_gpu_data();

  // Use `data` (size() bytes, owned by the caller, not null) as the host
  // copy: head becomes HEAD_AT_CPU. A host buffer this object owned is freed.
  absl::Status set_cpu_data(void* data);

  // Starts copying the host copy to the device on `stream` and marks the
  // memory SYNCED; the caller synchronizes the stream before relying on the
  // device copy. Requires HEAD_AT_CPU (SYNCED is a no-op).
  absl::Status async_gpu_push(cuda::StreamHandle stream);

  SyncedHead head() const { return head_; }
  size_t size() const { return size_; }
  bool owns_cpu_data() const { return cpu_allocator_ != nullptr; }
  const SyncedMemoryOptions& options() const { return options_; }
  int device_index() const { return options_.device_index; }

 private:
  absl::Status ToCpu();
  absl::Status ToGpu();
  absl::Status AllocateCpu();
  absl::Status AllocateGpu();
  absl::Status DeviceError(const absl::Status& cause) const;

  const size_t size_;
  const SyncedMemoryOptions options_;
  SyncedHead head_ = UNINITIALIZED;
  void* cpu_ptr_ = nullptr;
  void* gpu_ptr_ = nullptr;
  // Who made each pointer; null when not allocated (or, for cpu_ptr_, lent).
  Allocator* cpu_allocator_ = nullptr;
  Allocator* gpu_allocator_ = nullptr;
};

const char* SyncedHeadName(SyncedMemory::SyncedHead head);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_MEMORY_SYNCED_MEMORY_H_
