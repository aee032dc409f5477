#include "memory/synced_memory.h"

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

const char* SyncedHeadName(SyncedMemory::SyncedHead head) {
  switch (head) {
    case SyncedMemory::UNINITIALIZED:
      return "UNINITIALIZED";
    case SyncedMemory::HEAD_AT_CPU:
      return "HEAD_AT_CPU";
    case SyncedMemory::HEAD_AT_GPU:
      return "HEAD_AT_GPU";
    case SyncedMemory::SYNCED:
      return "SYNCED";
  }
  return "unknown";
}

SyncedMemory::SyncedMemory(size_t size, SyncedMemoryOptions options)
    : size_(size), options_(options) {}

SyncedMemory::~SyncedMemory() {
  if (cpu_allocator_ != nullptr) cpu_allocator_->Deallocate(cpu_ptr_, size_);
  if (gpu_allocator_ != nullptr) gpu_allocator_->Deallocate(gpu_ptr_, size_);
}

absl::StatusOr<const void*> SyncedMemory::cpu_data() {
  absl::Status status = ToCpu();
  if (!status.ok()) return status;
  return static_cast<const void*>(cpu_ptr_);
}

absl::StatusOr<void*> SyncedMemory::mutable_cpu_data() {
  absl::Status status = ToCpu();
  if (!status.ok()) return status;
  head_ = HEAD_AT_CPU;
  return cpu_ptr_;
}

absl::StatusOr<const void*> SyncedMemory::gpu_data() {
  absl::Status status = ToGpu();
  if (!status.ok()) return status;
  return static_cast<const void*>(gpu_ptr_);
}

absl::StatusOr<void*> SyncedMemory::mutable_gpu_data() {
  absl::Status status = ToGpu();
  if (!status.ok()) return status;
  head_ = HEAD_AT_GPU;
  return gpu_ptr_;
}

absl::Status SyncedMemory::set_cpu_data(void* data) {
  if (data == nullptr) {
    return absl::InvalidArgumentError("set_cpu_data: data is null");
  }
  if (cpu_allocator_ != nullptr) {
    cpu_allocator_->Deallocate(cpu_ptr_, size_);
    cpu_allocator_ = nullptr;
  }
  cpu_ptr_ = data;
  head_ = HEAD_AT_CPU;
  return absl::OkStatus();
}

absl::Status SyncedMemory::async_gpu_push(cuda::StreamHandle stream) {
  if (head_ == SYNCED) return absl::OkStatus();
  if (head_ != HEAD_AT_CPU) {
    return absl::FailedPreconditionError(absl::StrCat(
        "async_gpu_push needs HEAD_AT_CPU, memory is ", SyncedHeadName(head_)));
  }
  absl::Status status = AllocateGpu();
  if (!status.ok()) return status;
  if (size_ > 0) {
    status =
        gpu_allocator_->CopyFromHostAsync(gpu_ptr_, cpu_ptr_, size_, stream);
    if (!status.ok()) return DeviceError(status);
  }
  head_ = SYNCED;
  return absl::OkStatus();
}

absl::Status SyncedMemory::ToCpu() {
  switch (head_) {
    case UNINITIALIZED: {
      absl::Status status = AllocateCpu();
      if (!status.ok()) return status;
      head_ = HEAD_AT_CPU;
      return absl::OkStatus();
    }
    case HEAD_AT_GPU: {
      absl::Status status = AllocateCpu();
      if (!status.ok()) return status;
      if (size_ > 0) {
        status = gpu_allocator_->CopyToHost(cpu_ptr_, gpu_ptr_, size_);
        if (!status.ok()) return DeviceError(status);
      }
      head_ = SYNCED;
      return absl::OkStatus();
    }
    case HEAD_AT_CPU:
    case SYNCED:
      return absl::OkStatus();
  }
  return absl::InternalError("SyncedMemory: corrupt head state");
}

absl::Status SyncedMemory::ToGpu() {
  switch (head_) {
    case UNINITIALIZED: {
      absl::Status status = AllocateGpu();
      if (!status.ok()) return status;
      head_ = HEAD_AT_GPU;
      return absl::OkStatus();
    }
    case HEAD_AT_CPU: {
      absl::Status status = AllocateGpu();
      if (!status.ok()) return status;
      if (size_ > 0) {
        status = gpu_allocator_->CopyFromHost(gpu_ptr_, cpu_ptr_, size_);
        if (!status.ok()) return DeviceError(status);
      }
      head_ = SYNCED;
      return absl::OkStatus();
    }
    case HEAD_AT_GPU:
    case SYNCED:
      return absl::OkStatus();
  }
  return absl::InternalError("SyncedMemory: corrupt head state");
}

// Idempotent: allocates (zero-filled) only if the side has no buffer yet.
absl::Status SyncedMemory::AllocateCpu() {
  if (cpu_ptr_ != nullptr || size_ == 0) return absl::OkStatus();
  Allocator* allocator = options_.host_allocator;
  if (allocator == nullptr) {
    switch (options_.host) {
      case SyncedMemoryOptions::Host::kPageable:
        allocator = HostAllocator();
        break;
      case SyncedMemoryOptions::Host::kPinned:
        allocator = PinnedHostAllocator();
        break;
      case SyncedMemoryOptions::Host::kAuto:
        allocator = cuda::DeviceAvailable(options_.device_index).ok()
                        ? PinnedHostAllocator()
                        : HostAllocator();
        break;
    }
  }
  absl::StatusOr<void*> ptr = allocator->Allocate(size_);
  if (!ptr.ok()) {
    return absl::Status(
        ptr.status().code(),
        absl::StrCat("SyncedMemory(", size_, " bytes): ", allocator->name(),
                     " allocation: ", ptr.status().message()));
  }
  absl::Status status = allocator->Fill(*ptr, 0, size_);
  if (!status.ok()) {
    allocator->Deallocate(*ptr, size_);
    return status;
  }
  cpu_ptr_ = *ptr;
  cpu_allocator_ = allocator;
  return absl::OkStatus();
}

absl::Status SyncedMemory::AllocateGpu() {
  if (gpu_allocator_ != nullptr) return absl::OkStatus();
  Allocator* allocator = options_.device_allocator;
  if (allocator == nullptr) {
    absl::StatusOr<Allocator*> device = DeviceAllocator(options_.device_index);
    if (!device.ok()) return DeviceError(device.status());
    allocator = *device;
  }
  void* ptr = nullptr;
  if (size_ > 0) {
    absl::StatusOr<void*> allocated = allocator->Allocate(size_);
    if (!allocated.ok()) return DeviceError(allocated.status());
    absl::Status status = allocator->Fill(*allocated, 0, size_);
    if (!status.ok()) {
      allocator->Deallocate(*allocated, size_);
      return DeviceError(status);
    }
    ptr = *allocated;
  }
  gpu_ptr_ = ptr;
  gpu_allocator_ = allocator;
  return absl::OkStatus();
}

absl::Status SyncedMemory::DeviceError(const absl::Status& cause) const {
  return absl::Status(
      cause.code(), absl::StrCat("SyncedMemory(", size_, " bytes) on device ",
                                 options_.device_index, ": ", cause.message()));
}

}  // namespace actorflow::internal
