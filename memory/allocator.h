#ifndef ACTORFLOW_MEMORY_ALLOCATOR_H_
#define ACTORFLOW_MEMORY_ALLOCATOR_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/cuda_api.h"

namespace actorflow::internal {

enum class MemoryKind { kHost, kPinnedHost, kDevice };
const char* MemoryKindName(MemoryKind kind);

// Where register payloads come from. Plans allocate every buffer once, at
// load time; the counters let tests check that nothing is allocated later.
// Implementations are thread-safe.
class Allocator {
 public:
  virtual ~Allocator() = default;

  // bytes > 0. The memory is not zeroed.
  absl::StatusOr<void*> Allocate(size_t bytes);
  // `ptr` must come from this allocator's Allocate(bytes).
  void Deallocate(void* ptr, size_t bytes);

  virtual MemoryKind kind() const = 0;
  // The CUDA device for kDevice; -1 otherwise.
  virtual int device_index() const { return -1; }
  virtual std::string name() const = 0;

  // Moving bytes between this allocator's memory and host memory. The
  // defaults are for memory the CPU can address (memcpy/memset); the CUDA
  // device allocator overrides them, and tests substitute a host-backed
  // "device" to exercise every SyncedMemory transition without a GPU.
  virtual absl::Status CopyFromHost(void* dst, const void* src, size_t bytes);
  virtual absl::Status CopyToHost(void* dst, const void* src, size_t bytes);
  // Enqueued on `stream`; complete once the stream is synchronized.
  virtual absl::Status CopyFromHostAsync(void* dst, const void* src,
                                         size_t bytes,
                                         cuda::StreamHandle stream);
  virtual absl::Status Fill(void* dst, int value, size_t bytes);

  int64_t allocation_count() const { return allocations_.load(); }
  int64_t live_bytes() const { return live_bytes_.load(); }

 protected:
  virtual absl::StatusOr<void*> DoAllocate(size_t bytes) = 0;
  virtual void DoDeallocate(void* ptr, size_t bytes) = 0;

 private:
  std::atomic<int64_t> allocations_{0};
  std::atomic<int64_t> live_bytes_{0};
};

// Process-wide allocators. Host: pageable, 64-byte aligned. Pinned host:
// page-locked through CUDA (errors without a usable device).
Allocator* HostAllocator();
Allocator* PinnedHostAllocator();
// Errors (no crash) when the build has no CUDA or the device is not usable.
absl::StatusOr<Allocator*> DeviceAllocator(int device_index);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_MEMORY_ALLOCATOR_H_
