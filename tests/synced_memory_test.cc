// SyncedMemory's state machine and ownership, without a GPU: a host-backed
// stand-in plays the device, counting every copy, so each transition's
// effect (which side is current, whether bytes moved) is checked in CI.
// synced_memory_gpu_test.cc repeats the transitions on a real device.
#include "memory/synced_memory.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "actorflow/cuda_api.h"
#include "memory/allocator.h"

namespace actorflow::internal {
namespace {

using Head = SyncedMemory::SyncedHead;

// Host memory that records what it made and what it freed.
class CountingAllocator : public Allocator {
 public:
  explicit CountingAllocator(MemoryKind kind) : kind_(kind) {}
  ~CountingAllocator() override { CHECK(live_.empty()); }

  MemoryKind kind() const override { return kind_; }
  std::string name() const override { return "counting"; }

  absl::Status CopyFromHost(void* dst, const void* src, size_t bytes) override {
    ++to_device_copies;
    return Allocator::CopyFromHost(dst, src, bytes);
  }
  absl::Status CopyToHost(void* dst, const void* src, size_t bytes) override {
    ++to_host_copies;
    return Allocator::CopyToHost(dst, src, bytes);
  }
  absl::Status CopyFromHostAsync(void* dst, const void* src, size_t bytes,
                                 cuda::StreamHandle) override {
    ++async_copies;
    return Allocator::CopyFromHost(dst, src, bytes);
  }

  int to_device_copies = 0;
  int to_host_copies = 0;
  int async_copies = 0;
  int frees = 0;
  int foreign_frees = 0;  // pointers this allocator never made

 protected:
  absl::StatusOr<void*> DoAllocate(size_t bytes) override {
    void* ptr = ::operator new(bytes);
    std::memset(ptr, 0xAB, bytes);  // garbage: SyncedMemory must zero it
    live_.insert(ptr);
    return ptr;
  }
  void DoDeallocate(void* ptr, size_t) override {
    ++frees;
    if (live_.erase(ptr) == 0) {
      ++foreign_frees;
      return;
    }
    ::operator delete(ptr);
  }

 private:
  MemoryKind kind_;
  std::set<void*> live_;
};

struct Fixture {
  static constexpr size_t kFloats = 64;
  CountingAllocator host{MemoryKind::kHost};
  CountingAllocator device{MemoryKind::kDevice};
  SyncedMemory mem{kFloats * sizeof(float),
                   SyncedMemoryOptions{.host_allocator = &host,
                                       .device_allocator = &device}};

  float* MutableCpu() {
    auto ptr = mem.mutable_cpu_data();
    REQUIRE(ptr.ok());
    return static_cast<float*>(*ptr);
  }
  const float* Cpu() {
    auto ptr = mem.cpu_data();
    REQUIRE(ptr.ok());
    return static_cast<const float*>(*ptr);
  }
  float* MutableGpu() {
    auto ptr = mem.mutable_gpu_data();
    REQUIRE(ptr.ok());
    return static_cast<float*>(*ptr);
  }
  const float* Gpu() {
    auto ptr = mem.gpu_data();
    REQUIRE(ptr.ok());
    return static_cast<const float*>(*ptr);
  }
};

void Fill(float* data, float value) {
  for (size_t i = 0; i < Fixture::kFloats; ++i) data[i] = value + i;
}

bool Holds(const float* data, float value) {
  for (size_t i = 0; i < Fixture::kFloats; ++i) {
    if (data[i] != value + i) return false;
  }
  return true;
}

bool AllZero(const float* data) {
  for (size_t i = 0; i < Fixture::kFloats; ++i) {
    if (data[i] != 0.0f) return false;
  }
  return true;
}

TEST_CASE("UNINITIALIZED: each side is allocated lazily and zero-filled",
          "[synced_memory]") {
  Fixture f;
  CHECK(f.mem.head() == SyncedMemory::UNINITIALIZED);
  CHECK(f.mem.size() == Fixture::kFloats * sizeof(float));
  CHECK(f.host.allocation_count() == 0);
  CHECK(f.device.allocation_count() == 0);

  SECTION("cpu_data -> HEAD_AT_CPU") {
    CHECK(AllZero(f.Cpu()));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_CPU);
    CHECK(f.host.allocation_count() == 1);
    CHECK(f.device.allocation_count() == 0);
  }
  SECTION("mutable_cpu_data -> HEAD_AT_CPU") {
    CHECK(AllZero(f.MutableCpu()));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_CPU);
  }
  SECTION("gpu_data -> HEAD_AT_GPU") {
    CHECK(AllZero(f.Gpu()));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_GPU);
    CHECK(f.host.allocation_count() == 0);
    CHECK(f.device.allocation_count() == 1);
  }
  SECTION("mutable_gpu_data -> HEAD_AT_GPU") {
    CHECK(AllZero(f.MutableGpu()));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_GPU);
  }
  CHECK(f.host.to_device_copies + f.host.to_host_copies == 0);
  CHECK(f.device.to_device_copies + f.device.to_host_copies == 0);
}

TEST_CASE(
    "HEAD_AT_CPU: reading the device copies once, writing it moves "
    "the head",
    "[synced_memory]") {
  Fixture f;
  Fill(f.MutableCpu(), 1.0f);
  REQUIRE(f.mem.head() == SyncedMemory::HEAD_AT_CPU);

  SECTION("gpu_data -> SYNCED, one host-to-device copy") {
    CHECK(Holds(f.Gpu(), 1.0f));
    CHECK(f.mem.head() == SyncedMemory::SYNCED);
    CHECK(f.device.to_device_copies == 1);
    // Reading either side again copies nothing.
    CHECK(Holds(f.Gpu(), 1.0f));
    CHECK(Holds(f.Cpu(), 1.0f));
    CHECK(f.mem.head() == SyncedMemory::SYNCED);
    CHECK(f.device.to_device_copies == 1);
    CHECK(f.device.to_host_copies == 0);
  }
  SECTION("mutable_gpu_data -> HEAD_AT_GPU, with the host bytes") {
    float* gpu = f.MutableGpu();
    CHECK(Holds(gpu, 1.0f));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_GPU);
    CHECK(f.device.to_device_copies == 1);
  }
  SECTION("cpu_data stays HEAD_AT_CPU") {
    CHECK(Holds(f.Cpu(), 1.0f));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_CPU);
    CHECK(f.device.allocation_count() == 0);
  }
}

TEST_CASE("HEAD_AT_GPU: reading the host copies once", "[synced_memory]") {
  Fixture f;
  Fill(f.MutableGpu(), 5.0f);
  REQUIRE(f.mem.head() == SyncedMemory::HEAD_AT_GPU);

  SECTION("cpu_data -> SYNCED") {
    CHECK(Holds(f.Cpu(), 5.0f));
    CHECK(f.mem.head() == SyncedMemory::SYNCED);
    CHECK(f.device.to_host_copies == 1);
    CHECK(Holds(f.Cpu(), 5.0f));
    CHECK(f.device.to_host_copies == 1);
  }
  SECTION("mutable_cpu_data -> HEAD_AT_CPU, with the device bytes") {
    float* cpu = f.MutableCpu();
    CHECK(Holds(cpu, 5.0f));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_CPU);
    CHECK(f.device.to_host_copies == 1);
  }
  SECTION("gpu_data stays HEAD_AT_GPU") {
    CHECK(Holds(f.Gpu(), 5.0f));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_GPU);
    CHECK(f.host.allocation_count() == 0);
  }
}

TEST_CASE(
    "SYNCED: writing a side makes it the only current one, and the "
    "next read of the other side copies it over",
    "[synced_memory]") {
  Fixture f;
  Fill(f.MutableCpu(), 1.0f);
  f.Gpu();
  REQUIRE(f.mem.head() == SyncedMemory::SYNCED);

  SECTION("mutable_cpu_data -> HEAD_AT_CPU") {
    Fill(f.MutableCpu(), 2.0f);
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_CPU);
    CHECK(Holds(f.Gpu(), 2.0f));
    CHECK(f.device.to_device_copies == 2);
    CHECK(f.mem.head() == SyncedMemory::SYNCED);
  }
  SECTION("mutable_gpu_data -> HEAD_AT_GPU") {
    Fill(f.MutableGpu(), 3.0f);
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_GPU);
    CHECK(Holds(f.Cpu(), 3.0f));
    CHECK(f.device.to_host_copies == 1);
    CHECK(f.mem.head() == SyncedMemory::SYNCED);
  }
  // Each side was allocated exactly once through all of this.
  CHECK(f.host.allocation_count() == 1);
  CHECK(f.device.allocation_count() == 1);
}

TEST_CASE("async_gpu_push", "[synced_memory]") {
  Fixture f;
  SECTION("needs HEAD_AT_CPU") {
    absl::Status status = f.mem.async_gpu_push(nullptr);
    CHECK(absl::IsFailedPrecondition(status));
    CHECK(status.message() ==
          "async_gpu_push needs HEAD_AT_CPU, memory is UNINITIALIZED");
    f.MutableGpu();
    CHECK(absl::IsFailedPrecondition(f.mem.async_gpu_push(nullptr)));
    CHECK(f.mem.head() == SyncedMemory::HEAD_AT_GPU);
  }
  SECTION("HEAD_AT_CPU -> SYNCED with one asynchronous copy") {
    Fill(f.MutableCpu(), 9.0f);
    REQUIRE(f.mem.async_gpu_push(nullptr).ok());
    CHECK(f.mem.head() == SyncedMemory::SYNCED);
    CHECK(f.device.async_copies == 1);
    CHECK(Holds(f.Gpu(), 9.0f));
    // SYNCED: nothing more to push.
    REQUIRE(f.mem.async_gpu_push(nullptr).ok());
    CHECK(f.device.async_copies == 1);
    CHECK(f.device.to_device_copies == 0);
  }
}

TEST_CASE(
    "ownership: lent buffers are never freed, owned ones once, by "
    "their own allocator",
    "[synced_memory]") {
  CountingAllocator host(MemoryKind::kHost);
  CountingAllocator device(MemoryKind::kDevice);
  SyncedMemoryOptions options{.host_allocator = &host,
                              .device_allocator = &device};
  std::vector<float> lent(Fixture::kFloats, 4.0f);

  SECTION("lent before any allocation") {
    {
      SyncedMemory mem(lent.size() * sizeof(float), options);
      REQUIRE(mem.set_cpu_data(lent.data()).ok());
      CHECK(mem.head() == SyncedMemory::HEAD_AT_CPU);
      CHECK_FALSE(mem.owns_cpu_data());
      auto cpu = mem.cpu_data();
      REQUIRE(cpu.ok());
      CHECK(*cpu == lent.data());
      // The device copy is the memory's own.
      auto gpu = mem.gpu_data();
      REQUIRE(gpu.ok());
      CHECK(static_cast<const float*>(*gpu)[3] == 4.0f);
    }
    CHECK(host.allocation_count() == 0);
    CHECK(host.frees == 0);
    CHECK(device.allocation_count() == 1);
    CHECK(device.frees == 1);
  }
  SECTION("lent after an owned host buffer: that one is freed at once") {
    {
      SyncedMemory mem(lent.size() * sizeof(float), options);
      Fill(static_cast<float*>(*mem.mutable_cpu_data()), 0.0f);
      CHECK(mem.owns_cpu_data());
      REQUIRE(mem.set_cpu_data(lent.data()).ok());
      CHECK(host.frees == 1);
      std::vector<float> second(Fixture::kFloats, 8.0f);
      REQUIRE(mem.set_cpu_data(second.data()).ok());
      CHECK(host.frees == 1);  // `lent` was not ours to free
      CHECK(static_cast<const float*>(*mem.cpu_data())[0] == 8.0f);
    }
    CHECK(host.allocation_count() == 1);
    CHECK(host.frees == 1);
    CHECK(host.foreign_frees == 0);
    CHECK(lent[0] == 4.0f);  // untouched
  }
  SECTION("null is refused") {
    SyncedMemory mem(16, options);
    CHECK(absl::IsInvalidArgument(mem.set_cpu_data(nullptr)));
    CHECK(mem.head() == SyncedMemory::UNINITIALIZED);
  }
  SECTION("both sides owned: each freed once by its maker") {
    {
      SyncedMemory mem(256, options);
      REQUIRE(mem.mutable_cpu_data().ok());
      REQUIRE(mem.gpu_data().ok());
    }
    CHECK(host.frees == 1);
    CHECK(device.frees == 1);
    CHECK(host.foreign_frees + device.foreign_frees == 0);
  }
  CHECK(host.live_bytes() == 0);
  CHECK(device.live_bytes() == 0);
}

TEST_CASE("zero bytes (a control token) allocates nothing but keeps states",
          "[synced_memory]") {
  CountingAllocator host(MemoryKind::kHost);
  CountingAllocator device(MemoryKind::kDevice);
  SyncedMemory mem(0, SyncedMemoryOptions{.host_allocator = &host,
                                          .device_allocator = &device});
  REQUIRE(mem.mutable_cpu_data().ok());
  CHECK(mem.head() == SyncedMemory::HEAD_AT_CPU);
  REQUIRE(mem.gpu_data().ok());
  CHECK(mem.head() == SyncedMemory::SYNCED);
  CHECK(host.allocation_count() + device.allocation_count() == 0);
}

TEST_CASE(
    "without a usable device, device accessors fail clearly and "
    "change nothing",
    "[synced_memory]") {
  if (cuda::DeviceAvailable(0).ok()) {
    std::printf(
        "note: a CUDA device is usable here; "
        "synced_memory_gpu_test covers it\n");
    return;
  }
  SyncedMemory mem(
      64 * sizeof(float),
      SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPageable});
  auto cpu = mem.mutable_cpu_data();
  REQUIRE(cpu.ok());
  Fill(static_cast<float*>(*cpu), 7.0f);
  int64_t host_allocations = HostAllocator()->allocation_count();

  auto gpu = mem.gpu_data();
  REQUIRE_FALSE(gpu.ok());
  CHECK(absl::IsUnavailable(gpu.status()));
  std::string message(gpu.status().message());
  INFO(message);
  CHECK(message.find("SyncedMemory(256 bytes) on device 0") == 0);
  CHECK((message.find("built without CUDA") != std::string::npos ||
         message.find("no usable CUDA device") != std::string::npos));
  CHECK_FALSE(mem.mutable_gpu_data().ok());
  CHECK_FALSE(mem.async_gpu_push(nullptr).ok());
  CHECK(mem.head() == SyncedMemory::HEAD_AT_CPU);
  CHECK(Holds(static_cast<const float*>(*mem.cpu_data()), 7.0f));
  CHECK(HostAllocator()->allocation_count() == host_allocations);

  // Pinned host memory needs CUDA too: a clear error, not a crash.
  SyncedMemory pinned(
      64, SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPinned});
  auto pinned_cpu = pinned.cpu_data();
  REQUIRE_FALSE(pinned_cpu.ok());
  CHECK(pinned_cpu.status().message().find("pinned host allocation") !=
        absl::string_view::npos);
  CHECK(pinned.head() == SyncedMemory::UNINITIALIZED);

  // kAuto falls back to pageable memory when nothing can be pinned.
  SyncedMemory automatic(64);
  int64_t before = HostAllocator()->allocation_count();
  REQUIRE(automatic.cpu_data().ok());
  CHECK(HostAllocator()->allocation_count() == before + 1);
  CHECK(PinnedHostAllocator()->allocation_count() == 0);
}

TEST_CASE("an allocation that cannot be served is an error, not a crash",
          "[synced_memory]") {
  SyncedMemory huge(
      size_t{1} << 50,  // a petabyte
      SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPageable});
  auto cpu = huge.cpu_data();
  REQUIRE_FALSE(cpu.ok());
  CHECK(absl::IsResourceExhausted(cpu.status()));
  CHECK(cpu.status().message() ==
        "SyncedMemory(1125899906842624 bytes): host allocation: out of host "
        "memory");
  CHECK(huge.head() == SyncedMemory::UNINITIALIZED);
}

TEST_CASE("head names", "[synced_memory]") {
  CHECK(std::string(SyncedHeadName(SyncedMemory::UNINITIALIZED)) ==
        "UNINITIALIZED");
  CHECK(std::string(SyncedHeadName(SyncedMemory::HEAD_AT_CPU)) ==
        "HEAD_AT_CPU");
  CHECK(std::string(SyncedHeadName(SyncedMemory::HEAD_AT_GPU)) ==
        "HEAD_AT_GPU");
  CHECK(std::string(SyncedHeadName(SyncedMemory::SYNCED)) == "SYNCED");
}

}  // namespace
}  // namespace actorflow::internal
