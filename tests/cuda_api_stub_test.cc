// The device calls of a CPU-only build: every one reports the missing CUDA
// support instead of crashing. Linked against the stub even where CUDA is
// installed, so this path is tested on every machine.
#include <catch2/catch.hpp>

#include "actorflow/cuda_api.h"

namespace actorflow::internal {
namespace {

bool SaysNoCuda(const absl::Status& status) {
  return absl::IsUnavailable(status) &&
         status.message().find("built without CUDA") != absl::string_view::npos;
}

TEST_CASE("CPU-only build: device calls report that CUDA is not built in",
          "[cuda_stub]") {
  CHECK_FALSE(cuda::BuiltWithCuda());
  CHECK(SaysNoCuda(cuda::DeviceAvailable(0)));
  CHECK(SaysNoCuda(cuda::DeviceCount().status()));
  CHECK(SaysNoCuda(cuda::DeviceMalloc(0, 64).status()));
  CHECK(SaysNoCuda(cuda::PinnedMalloc(64).status()));
  char host[8] = {};
  CHECK(SaysNoCuda(cuda::MemcpyHostToDevice(0, host, host, 8)));
  CHECK(SaysNoCuda(cuda::MemcpyDeviceToHost(0, host, host, 8)));
  CHECK(SaysNoCuda(cuda::MemcpyHostToDeviceAsync(0, host, host, 8, nullptr)));
  CHECK(SaysNoCuda(cuda::DeviceMemset(0, host, 0, 8)));
  CHECK(SaysNoCuda(cuda::StreamCreate(0).status()));
  CHECK(SaysNoCuda(cuda::StreamSynchronize(0, nullptr)));
  // Frees of nothing are harmless.
  cuda::DeviceFree(0, nullptr);
  cuda::PinnedFree(nullptr);
  cuda::StreamDestroy(0, nullptr);
}

}  // namespace
}  // namespace actorflow::internal
