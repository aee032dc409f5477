// No heap allocation per act: a run of many more pieces allocates no more
// than a short one (allocation happens at load and while queues reach their
// working size, both independent of the piece count).
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <new>

#include "runtime/plan_builder.h"
#include "runtime/runtime.h"

namespace {
std::atomic<int64_t> allocations{0};
}  // namespace

// Counting replacements of the global allocation functions (this binary
// only). Every form is replaced, so every allocation is a malloc/free pair
// whatever the sanitizer build.
namespace {
void* CountedAlloc(size_t size) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void* CountedAlignedAlloc(size_t size, std::align_val_t align) {
  allocations.fetch_add(1, std::memory_order_relaxed);
  size_t a = static_cast<size_t>(align);
  if (void* p = std::aligned_alloc(a, (size + a - 1) / a * a)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(size_t size) { return CountedAlloc(size); }
void* operator new[](size_t size) { return CountedAlloc(size); }
void* operator new(size_t size, std::align_val_t align) {
  return CountedAlignedAlloc(size, align);
}
void* operator new[](size_t size, std::align_val_t align) {
  return CountedAlignedAlloc(size, align);
}
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  allocations.fetch_add(1, std::memory_order_relaxed);
  return std::malloc(size == 0 ? 1 : size);
}
void* operator new[](size_t size, const std::nothrow_t& tag) noexcept {
  return operator new(size, tag);
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  std::free(p);
}
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}
void operator delete[](void* p, size_t, std::align_val_t) noexcept {
  std::free(p);
}

namespace actorflow {
namespace {

int64_t AllocationsForRun(const Plan& plan, int64_t pieces) {
  RunOptions options;
  options.pieces = pieces;
  int64_t before = allocations.load();
  auto result = RunPlan(plan, options);
  int64_t used = allocations.load() - before;
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
}  // namespace actorflow
