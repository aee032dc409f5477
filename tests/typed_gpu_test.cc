// Typed plans on GPU streams: every data type through cast/identity/add
// chains behind h2d and d2h, and dynamic shapes through copies that move
// only the valid bytes (counted on the emulated device). Prints SKIPPED
// where no GPU is usable.
#include <catch2/catch.hpp>

#include "runtime/runtime.h"
#include "tests/gpu_test_util.h"
#include "tests/typed_plans.h"
#if defined(ACTORFLOW_EMULATED_GPU)
#include "memory/cuda_emulation.h"
#endif

namespace actorflow::internal {
namespace {

using testing::Streams;

TEST_CASE("GPU: every data type through cast, identity and add chains",
          "[typed][gpu]") {
  if (!testing::GpuOrSkip("typed chains on GPU streams")) return;
  int count = 0;
  const DataType* all = AllDataTypes(&count);
  const int64_t pieces = 40;
  for (int t = 0; t < count; ++t) {
    INFO("type " << DataTypeName(all[t]));
    auto result = RunPlan(testing::TypeChain(all[t], Streams::kGpu, pieces));
    INFO(result.status().ToString());
    REQUIRE(result.ok());
    const SinkSummary& sink = result->sinks.at("sink");
    CHECK(sink.pieces == pieces);
    CHECK(sink.in_order);
    CHECK(sink.checksum == testing::ChainChecksum(all[t], 5, pieces));
  }
}

TEST_CASE("GPU: dynamic shapes through h2d, a GPU kernel and d2h",
          "[typed][dynamic][gpu]") {
  if (!testing::GpuOrSkip("dynamic shapes through copies")) return;
  const int64_t pieces = 101;
  Plan plan = testing::DynamicChain(true, pieces);
#if defined(ACTORFLOW_EMULATED_GPU)
  const int64_t before = cuda::emulated::AsyncBytesCopied();
#endif
  auto result = RunPlan(plan);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  CHECK(result->sinks.at("sink").checksum == testing::DynamicChecksum(pieces));
#if defined(ACTORFLOW_EMULATED_GPU)
  // h2d, identity and d2h each move the valid int32s of each piece, never
  // the whole [6].
  int64_t valid = 0;
  for (int64_t p = 0; p < pieces; ++p) valid += (1 + p % 4) * 4;
  CHECK(cuda::emulated::AsyncBytesCopied() - before == 3 * valid);
#endif
}

}  // namespace
}  // namespace actorflow::internal
