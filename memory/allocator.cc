#include "memory/allocator.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "actorflow/cuda_api.h"
#include "base/mutex.h"

namespace actorflow::internal {

const char* MemoryKindName(MemoryKind kind) {
  switch (kind) {
    case MemoryKind::kHost:
      return "host";
    case MemoryKind::kPinnedHost:
      return "pinned host";
    case MemoryKind::kDevice:
      return "device";
  }
  return "unknown";
}

absl::StatusOr<void*> Allocator::Allocate(size_t bytes) {
  absl::StatusOr<void*> ptr = DoAllocate(bytes);
  if (ptr.ok()) {
    allocations_.fetch_add(1, std::memory_order_relaxed);
    live_bytes_.fetch_add(static_cast<int64_t>(bytes),
                          std::memory_order_relaxed);
  }
  return ptr;
}

void Allocator::Deallocate(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  live_bytes_.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  DoDeallocate(ptr, bytes);
}

absl::Status Allocator::CopyFromHost(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::Status Allocator::CopyToHost(void* dst, const void* src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return absl::OkStatus();
}

absl::Status Allocator::CopyFromHostAsync(void* dst, const void* src,
                                          size_t bytes, cuda::StreamHandle) {
  return CopyFromHost(dst, src, bytes);
}

absl::Status Allocator::Fill(void* dst, int value, size_t bytes) {
  std::memset(dst, value, bytes);
  return absl::OkStatus();
}

namespace {

class PageableHostAllocator final : public Allocator {
 public:
  MemoryKind kind() const override { return MemoryKind::kHost; }
  std::string name() const override { return "host"; }

 protected:
  absl::StatusOr<void*> DoAllocate(size_t bytes) override {
    // A cache line, so buffers of different registers never share one.
    constexpr size_t kAlign = 64;
    void* ptr =
        std::aligned_alloc(kAlign, (bytes + kAlign - 1) / kAlign * kAlign);
    if (ptr == nullptr) {
      return absl::ResourceExhaustedError("out of host memory");
    }
    return ptr;
  }
  void DoDeallocate(void* ptr, size_t) override { std::free(ptr); }
};

class PinnedAllocator final : public Allocator {
 public:
  MemoryKind kind() const override { return MemoryKind::kPinnedHost; }
  std::string name() const override { return "pinned host"; }

 protected:
  absl::StatusOr<void*> DoAllocate(size_t bytes) override {
    return cuda::PinnedMalloc(bytes);
  }
  void DoDeallocate(void* ptr, size_t) override { cuda::PinnedFree(ptr); }
};

class CudaDeviceAllocator final : public Allocator {
 public:
  explicit CudaDeviceAllocator(int device_index)
      : device_index_(device_index) {}
  MemoryKind kind() const override { return MemoryKind::kDevice; }
  int device_index() const override { return device_index_; }
  std::string name() const override {
    return absl::StrCat("device ", device_index_);
  }

 protected:
  absl::StatusOr<void*> DoAllocate(size_t bytes) override {
    return cuda::DeviceMalloc(device_index_, bytes);
  }
  void DoDeallocate(void* ptr, size_t) override {
    cuda::DeviceFree(device_index_, ptr);
  }

 public:
  absl::Status CopyFromHost(void* dst, const void* src, size_t bytes) override {
    return cuda::MemcpyHostToDevice(device_index_, dst, src, bytes);
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    return cuda::MemcpyDeviceToHost(device_index_, dst, src, bytes);
  }
  absl::Status CopyFromHostAsync(void* dst, const void* src, size_t bytes,
                                 cuda::StreamHandle stream) override {
    return cuda::MemcpyHostToDeviceAsync(device_index_, dst, src, bytes,
                                         stream);
  }
  absl::Status Fill(void* dst, int value, size_t bytes) override {
    return cuda::DeviceMemset(device_index_, dst, value, bytes);
  }

 private:
  const int device_index_;
};

}  // namespace

Allocator* HostAllocator() {
  static PageableHostAllocator allocator;
  return &allocator;
}

Allocator* PinnedHostAllocator() {
  static PinnedAllocator allocator;
  return &allocator;
}

absl::StatusOr<Allocator*> DeviceAllocator(int device_index) {
  absl::Status available = cuda::DeviceAvailable(device_index);
  if (!available.ok()) return available;
  static Mutex mu;
  static std::vector<std::unique_ptr<CudaDeviceAllocator>> allocators
      ABSL_GUARDED_BY(mu);
  MutexLock lock(&mu);
  if (allocators.size() <= static_cast<size_t>(device_index)) {
    allocators.resize(device_index + 1);
  }
  auto& slot = allocators[device_index];
  if (slot == nullptr)
    slot = std::make_unique<CudaDeviceAllocator>(device_index);
  return slot.get();
}

}  // namespace actorflow::internal
