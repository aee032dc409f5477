// The randomized differential test of the dependency engine: 30,000
// operations per seed over ~100 variables, each writing one variable with a
// function of a random multiset of variables (possibly including the one it
// writes). Every engine type must reproduce the sequential result bit for bit.
// Seeded: three fixed seeds plus a fresh one (printed; ACTORFLOW_SEED replays
// it).
#include <catch2/catch.hpp>
#include <cstdint>
#include <random>
#include <thread>
#include <vector>

#include "engine/engine.h"
#include "tests/test_util.h"

namespace actorflow::engine {
namespace testing = ::actorflow::internal::testing;
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

struct RandomOp {
  int write;
  std::vector<int> reads;  // repeats allowed; may include `write`
  uint64_t salt;
  int rounds;  // work: ~rounds * 2 ns
  FnProperty prop;
  int priority;
  int how;  // 0 PushSync, 1 PushAsync, 2 NewOperator + Push
};

// Deterministic work: what the op writes, from what it reads.
uint64_t Evaluate(const RandomOp& op, const std::vector<uint64_t>& data) {
  uint64_t h = op.salt;
  for (int r : op.reads) h = Mix(h ^ data[r]);
  for (int i = 0; i < op.rounds; ++i) h = Mix(h);
  return h;
}

std::vector<RandomOp> MakeOps(std::mt19937_64& rng, int num_vars, int num_ops) {
  auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  constexpr FnProperty kProps[] = {FnProperty::kNormal, FnProperty::kNormal,
                                   FnProperty::kCPUPrioritized,
                                   FnProperty::kAsync};
  std::vector<RandomOp> ops(num_ops);
  for (RandomOp& op : ops) {
    op.write = uniform(0, num_vars - 1);
    int n = uniform(0, 4);
    for (int i = 0; i < n; ++i) op.reads.push_back(uniform(0, num_vars - 1));
    if (uniform(0, 3) == 0) op.reads.push_back(op.write);
    op.salt = rng();
    op.rounds = uniform(200, 1500);
    op.prop = kProps[uniform(0, 3)];
    op.priority = uniform(-5, 5);
    op.how = uniform(0, 2);
  }
  return ops;
}

std::vector<uint64_t> RunSequential(const std::vector<RandomOp>& ops,
                                    int num_vars) {
  std::vector<uint64_t> data(num_vars);
  for (int i = 0; i < num_vars; ++i) data[i] = Mix(i);
  for (const RandomOp& op : ops) data[op.write] = Evaluate(op, data);
  return data;
}

std::vector<uint64_t> RunOnEngine(EngineType type,
                                  const std::vector<RandomOp>& ops,
                                  int num_vars) {
  std::vector<uint64_t> data(num_vars);
  for (int i = 0; i < num_vars; ++i) data[i] = Mix(i);
  EngineOptions options;
  options.cpu_worker_nthreads = 2;  // real parallelism among the reads
  options.cpu_priority_nthreads = 2;
  std::unique_ptr<Engine> engine = Engine::Create(type, options);
  std::vector<VarHandle> vars;
  for (int i = 0; i < num_vars; ++i) vars.push_back(engine->NewVariable());
  std::vector<uint64_t> versions(num_vars, 0);
  for (const RandomOp& op : ops) {
    std::vector<VarHandle> reads;
    for (int r : op.reads) reads.push_back(vars[r]);
    std::vector<VarHandle> writes = {vars[op.write]};
    const RandomOp* p = &op;
    uint64_t* out = &data[op.write];
    const std::vector<uint64_t>* in = &data;
    switch (op.how) {
      case 0:
        engine->PushSync([p, out, in](RunContext) { *out = Evaluate(*p, *in); },
                         Context::CPU(), reads, writes, op.prop, op.priority);
        break;
      case 1:
        engine->PushAsync(
            [p, out, in](RunContext, CallbackOnComplete done) {
              *out = Evaluate(*p, *in);
              done();
            },
            Context::CPU(), reads, writes, op.prop, op.priority);
        break;
      default: {
        OprHandle opr = engine->NewOperator(
            [p, out, in](RunContext, CallbackOnComplete done) {
              *out = Evaluate(*p, *in);
              done();
            },
            reads, writes, op.prop);
        engine->Push(opr, Context::CPU(), op.priority);
        engine->DeleteOperator(opr);
      }
    }
    ++versions[op.write];
  }
  REQUIRE(engine->WaitForAll().ok());
  for (int i = 0; i < num_vars; ++i) {
    CHECK(vars[i]->version() == versions[i]);
    engine->DeleteVariable(nullptr, Context::CPU(), vars[i]);
  }
  REQUIRE(engine->WaitForAll().ok());
  CHECK(engine->pending() == 0);
  return data;
}

TEST_CASE("every engine type reproduces the sequential result bit for bit") {
  std::vector<uint64_t> seeds = {1, 2, 20261122,
                                 testing::TestSeed("engine_random_test")};
  constexpr int kVars = 100;
  constexpr int kOps = 30000;
  for (uint64_t seed : seeds) {
    std::mt19937_64 rng(seed);
    std::vector<RandomOp> ops = MakeOps(rng, kVars, kOps);
    std::vector<uint64_t> expected = RunSequential(ops, kVars);
    for (EngineType type : {EngineType::kNaive, EngineType::kThreadedPooled,
                            EngineType::kThreadedPerDevice}) {
      INFO("seed " << seed << ", " << EngineTypeName(type));
      std::vector<uint64_t> got = RunOnEngine(type, ops, kVars);
      for (int i = 0; i < kVars; ++i) {
        INFO("variable " << i);
        REQUIRE(got[i] == expected[i]);
      }
    }
  }
}

// Several client threads push at once. Each operation increments two
// random shared counters without atomics; the engine must make every
// increment exclusive, and two pushers ordering operations on the same
// variables in opposite ways must not deadlock.
TEST_CASE("concurrent pushers: exclusive writes, no deadlock, exact counts") {
  uint64_t seed = testing::TestSeed("engine_concurrent_pushers");
  constexpr int kVars = 8;
  constexpr int kThreads = 4;
  constexpr int kOpsPerThread = 2000;
  for (EngineType type : {EngineType::kNaive, EngineType::kThreadedPooled,
                          EngineType::kThreadedPerDevice}) {
    INFO(EngineTypeName(type));
    std::unique_ptr<Engine> engine = Engine::Create(type, EngineOptions());
    std::vector<VarHandle> vars;
    for (int i = 0; i < kVars; ++i) vars.push_back(engine->NewVariable());
    std::vector<int64_t> counters(kVars, 0);
    std::vector<std::vector<int64_t>> expected(kThreads,
                                               std::vector<int64_t>(kVars));
    std::vector<std::thread> pushers;
    for (int t = 0; t < kThreads; ++t) {
      pushers.emplace_back([&, t] {
        std::mt19937_64 rng(seed + t);
        for (int i = 0; i < kOpsPerThread; ++i) {
          int a = static_cast<int>(rng() % kVars);
          int b = static_cast<int>(rng() % kVars);
          int r = static_cast<int>(rng() % kVars);
          ++expected[t][a];
          if (b != a) ++expected[t][b];
          int64_t* ca = &counters[a];
          int64_t* cb = b != a ? &counters[b] : nullptr;
          const int64_t* cr = &counters[r];
          engine->PushSync(
              [ca, cb, cr](RunContext) {
                volatile int64_t seen = *cr;  // a read the writes must respect
                (void)seen;
                ++*ca;
                if (cb) ++*cb;
              },
              Context::CPU(), {vars[r]}, {vars[a], vars[b]});
        }
      });
    }
    for (std::thread& pusher : pushers) pusher.join();
    REQUIRE(engine->WaitForAll().ok());
    for (int v = 0; v < kVars; ++v) {
      int64_t total = 0;
      for (int t = 0; t < kThreads; ++t) total += expected[t][v];
      CHECK(counters[v] == total);
      CHECK(vars[v]->version() == static_cast<uint64_t>(total));
      engine->DeleteVariable(nullptr, Context::CPU(), vars[v]);
    }
    REQUIRE(engine->WaitForAll().ok());
  }
}

}  // namespace
}  // namespace actorflow::engine
