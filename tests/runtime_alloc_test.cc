// No heap allocation per act: a run of many more pieces allocates no more
// than a short one (allocation happens at load and while queues reach their
// working size, both independent of the piece count).
#include <catch2/catch.hpp>

#include "plan/plan_builder.h"
#include "runtime/runtime.h"
#include "tests/allocation_counter.h"

namespace actorflow::internal {
namespace {

int64_t AllocationsForRun(const Plan& plan, int64_t pieces) {
  RunOptions options;
  options.pieces = pieces;
  int64_t before = testing::AllocationCount();
  auto result = RunPlan(plan, options);
  int64_t used = testing::AllocationCount() - before;
  REQUIRE(result.ok());
  REQUIRE(result->sinks.at("sink").pieces == pieces);
  return used;
}

TEST_CASE("allocations do not grow with the number of pieces",
          "[runtime][alloc]") {
  // Eight stages over two threads, as in the benchmark.
  std::vector<TaskDef> tasks;
  tasks.push_back(TaskDef{.name = "s0", .op_type = "source"});
  for (int i = 1; i < 7; ++i) {
    TaskDef def{.name = "s" + std::to_string(i), .op_type = "identity"};
    def.inputs = {"s" + std::to_string(i - 1)};
    def.stream_index = i < 4 ? 0 : 1;
    tasks.push_back(def);
  }
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"s6"}};
  sink.stream_index = 1;
  sink.has_output = false;
  tasks.push_back(sink);
  auto plan = BuildPlan(tasks, 0);
  REQUIRE(plan.ok());

  AllocationsForRun(*plan, 1000);  // warm up one-time statics
  int64_t short_run = AllocationsForRun(*plan, 1'000);
  int64_t long_run = AllocationsForRun(*plan, 50'000);
  INFO("1000 pieces: " << short_run
                       << " allocations; 50000 pieces: " << long_run);
  // 49000 more pieces are 392000 more acts; allow a little slack for
  // queues that happen to reach a larger working size in the longer run.
  CHECK(long_run - short_run < 64);
}

}  // namespace
}  // namespace actorflow::internal
