// SyncedMemory against a real CUDA device: every transition moves real bytes
// across PCIe/NVLink. Each case prints SKIPPED with the reason where no
// device is usable (CI machines have the toolkit but no GPU).
#include <catch2/catch.hpp>
#include <cstring>
#include <vector>

#include "actorflow/cuda_api.h"
#include "memory/allocator.h"
#include "memory/synced_memory.h"
#include "tests/gpu_test_util.h"

namespace actorflow::internal {
namespace {

constexpr size_t kFloats = 1 << 16;
constexpr size_t kBytes = kFloats * sizeof(float);

std::vector<float> Pattern(float base) {
  std::vector<float> v(kFloats);
  for (size_t i = 0; i < kFloats; ++i) v[i] = base + static_cast<float>(i);
  return v;
}

std::vector<float> ReadDevice(const void* device_ptr) {
  std::vector<float> out(kFloats, -1.0f);
  REQUIRE(cuda::MemcpyDeviceToHost(0, out.data(), device_ptr, kBytes).ok());
  return out;
}

void WriteDevice(void* device_ptr, const std::vector<float>& values) {
  REQUIRE(cuda::MemcpyHostToDevice(0, device_ptr, values.data(), kBytes).ok());
}

std::vector<float> ReadHost(const void* host_ptr) {
  std::vector<float> out(kFloats);
  std::memcpy(out.data(), host_ptr, kBytes);
  return out;
}

TEST_CASE("GPU: lazy zero-filled device allocation", "[gpu]") {
  if (!testing::GpuOrSkip("synced memory device zero fill")) return;
  SyncedMemory mem(kBytes);
  auto gpu = mem.gpu_data();
  REQUIRE(gpu.ok());
  CHECK(mem.head() == SyncedMemory::HEAD_AT_GPU);
  CHECK(ReadDevice(*gpu) == std::vector<float>(kFloats, 0.0f));
}

TEST_CASE("GPU: host -> device -> host round trip through every state",
          "[gpu]") {
  if (!testing::GpuOrSkip("synced memory transitions")) return;
  SyncedMemory mem(kBytes);
  auto cpu = mem.mutable_cpu_data();
  REQUIRE(cpu.ok());
  std::vector<float> first = Pattern(1.0f);
  std::memcpy(*cpu, first.data(), kBytes);
  CHECK(mem.head() == SyncedMemory::HEAD_AT_CPU);

  auto gpu = mem.gpu_data();
  REQUIRE(gpu.ok());
  CHECK(mem.head() == SyncedMemory::SYNCED);
  CHECK(ReadDevice(*gpu) == first);

  auto mutable_gpu = mem.mutable_gpu_data();
  REQUIRE(mutable_gpu.ok());
  CHECK(mem.head() == SyncedMemory::HEAD_AT_GPU);
  std::vector<float> second = Pattern(100.0f);
  WriteDevice(*mutable_gpu, second);

  auto back = mem.cpu_data();
  REQUIRE(back.ok());
  CHECK(mem.head() == SyncedMemory::SYNCED);
  CHECK(ReadHost(*back) == second);

  auto host_again = mem.mutable_cpu_data();
  REQUIRE(host_again.ok());
  CHECK(mem.head() == SyncedMemory::HEAD_AT_CPU);
  CHECK(*host_again == *back);  // the same buffer, allocated once
}

TEST_CASE("GPU: async_gpu_push on a stream", "[gpu]") {
  if (!testing::GpuOrSkip("synced memory async push")) return;
  auto stream = cuda::StreamCreate(0);
  REQUIRE(stream.ok());
  SyncedMemory mem(kBytes);
  std::vector<float> values = Pattern(7.0f);
  std::memcpy(*mem.mutable_cpu_data(), values.data(), kBytes);
  REQUIRE(mem.async_gpu_push(*stream).ok());
  CHECK(mem.head() == SyncedMemory::SYNCED);
  REQUIRE(cuda::StreamSynchronize(0, *stream).ok());
  CHECK(ReadDevice(*mem.gpu_data()) == values);
  cuda::StreamDestroy(0, *stream);
}

TEST_CASE("GPU: host memory is pinned when it will feed a device", "[gpu]") {
  if (!testing::GpuOrSkip("synced memory pinned host")) return;
  int64_t pinned_before = PinnedHostAllocator()->allocation_count();
  {
    SyncedMemory automatic(kBytes);
    REQUIRE(automatic.cpu_data().ok());
    CHECK(PinnedHostAllocator()->allocation_count() == pinned_before + 1);
    SyncedMemory pageable(
        kBytes,
        SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPageable});
    REQUIRE(pageable.cpu_data().ok());
    CHECK(PinnedHostAllocator()->allocation_count() == pinned_before + 1);
  }
  CHECK(PinnedHostAllocator()->live_bytes() == 0);
}

TEST_CASE("GPU: a device index past the last one is a clear error", "[gpu]") {
  if (!testing::GpuOrSkip("synced memory bad device")) return;
  auto count = cuda::DeviceCount();
  REQUIRE(count.ok());
  SyncedMemory mem(64, SyncedMemoryOptions{.device_index = *count});
  auto gpu = mem.gpu_data();
  REQUIRE_FALSE(gpu.ok());
  CHECK(gpu.status().message().find("does not exist") !=
        absl::string_view::npos);
  CHECK(mem.head() == SyncedMemory::UNINITIALIZED);
}

}  // namespace
}  // namespace actorflow::internal
