// No heap allocation per push in steady state: operators and their blocks
// are recycled (engine/free_store.h), the variable lists are inline, and an
// AsyncFn without captures is stored inside its std::function.
#include <atomic>
#include <catch2/catch.hpp>
#include <cstdio>
#include <optional>
#include <vector>

#include "absl/base/config.h"
#include "engine/engine.h"
#include "tests/allocation_counter.h"
#include "tests/test_util.h"

namespace actorflow::engine {
namespace testing = ::actorflow::internal::testing;
namespace {

// Allocations made while pushing and running `rounds` rounds of 1000
// operations, each reading two of eight variables and writing a third. The
// engine holds at most one round in flight: what is recycled is bounded by
// what is in flight, which the pusher decides.
int64_t AllocationsFor(Engine* engine, const std::vector<VarHandle>& vars,
                       int rounds) {
  std::vector<VarHandle> reads(2);
  std::vector<VarHandle> writes(1);
  int64_t before = testing::AllocationCount();
  for (int round = 0; round < rounds; ++round) {
    for (int i = 0; i < 1000; ++i) {
      reads[0] = vars[i % 8];
      reads[1] = vars[(i * 3 + 1) % 8];
      writes[0] = vars[(i * 5 + 2) % 8];
      engine->PushAsync([](RunContext, CallbackOnComplete done) { done(); },
                        Context::CPU(), reads, writes);
    }
    REQUIRE(engine->WaitForAll().ok());
  }
  return testing::AllocationCount() - before;
}

// Puts a full round's worth of operations in flight at once (all waiting
// behind a held write), the most AllocationsFor ever has: afterwards the
// recycled blocks cover any round.
void FillPools(Engine* engine, const std::vector<VarHandle>& vars) {
  std::optional<CallbackOnComplete> held;
  std::atomic<bool> holding{false};
  engine->PushAsync(
      [&](RunContext, CallbackOnComplete done) {
        held.emplace(std::move(done));
        holding = true;
      },
      Context::CPU(), {}, {vars[0]});
  for (int i = 0; i < 1000; ++i) {
    engine->PushAsync([](RunContext, CallbackOnComplete done) { done(); },
                      Context::CPU(), {vars[0]}, {vars[1 + i % 7]});
  }
  REQUIRE(testing::WaitUntil([&] { return holding.load(); }));
  (*held)();
  held.reset();
  REQUIRE(engine->WaitForAll().ok());
}

TEST_CASE("a push allocates nothing in steady state") {
  for (EngineType type : {EngineType::kNaive, EngineType::kThreadedPooled,
                          EngineType::kThreadedPerDevice}) {
    INFO(EngineTypeName(type));
    std::unique_ptr<Engine> engine = Engine::Create(type, EngineOptions());
    std::vector<VarHandle> vars;
    for (int i = 0; i < 8; ++i) vars.push_back(engine->NewVariable());
    if (type != EngineType::kNaive) FillPools(engine.get(), vars);
    AllocationsFor(engine.get(), vars, 5);
    int64_t used = AllocationsFor(engine.get(), vars, 50);
#if defined(ABSL_HAVE_ADDRESS_SANITIZER)
    // ASan builds give every object fresh memory to catch use after free.
    std::printf(
        "%s: %lld allocations for 50000 pushes (ASan build: not "
        "recycled)\n",
        EngineTypeName(type), static_cast<long long>(used));
#else
    std::printf("%s: %lld allocations for 50000 pushes\n", EngineTypeName(type),
                static_cast<long long>(used));
    // Worker queues may still grow their storage once or twice.
    CHECK(used < 50);
#endif
    for (VarHandle var : vars) {
      engine->DeleteVariable(nullptr, Context::CPU(), var);
    }
    REQUIRE(engine->WaitForAll().ok());
  }
}

}  // namespace
}  // namespace actorflow::engine
