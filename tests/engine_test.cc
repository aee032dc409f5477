// The dependency engine's semantics, one behaviour per test: versions,
// duplicate variables, WaitForVar's scope, priorities, DeleteVariable,
// kAsync, errors, shutdown, contexts and configuration.
#include "engine/engine.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/cuda_api.h"
#include "tests/held_op.h"
#include "tests/test_util.h"

namespace actorflow::engine {
namespace testing = ::actorflow::internal::testing;
namespace {

using testing::HeldOp;
using testing::WaitUntil;

constexpr EngineType kThreaded[] = {EngineType::kThreadedPooled,
                                    EngineType::kThreadedPerDevice};
constexpr EngineType kAll[] = {EngineType::kNaive, EngineType::kThreadedPooled,
                               EngineType::kThreadedPerDevice};

// Runs `body` on a fresh engine of each type; the engine frees the
// variables the body leaves.
template <size_t N, typename Body>
void ForEachEngine(const EngineType (&types)[N], Body body) {
  for (EngineType type : types) {
    INFO(EngineTypeName(type));
    std::unique_ptr<Engine> engine = Engine::Create(type, EngineOptions());
    body(engine.get());
  }
}

// Pushes a write of a fresh variable and waits for it: with one FIFO CPU
// worker (ThreadedEnginePerDevice's default), every operation dispatched
// before it has run by then.
void Drain(Engine* engine) {
  VarHandle fence = engine->NewVariable();
  engine->PushSync([](RunContext) {}, Context::CPU(), {}, {fence});
  REQUIRE(engine->WaitForVar(fence).ok());
  engine->DeleteVariable(nullptr, Context::CPU(), fence);
}

TEST_CASE("version counts completed writes; reads leave it alone") {
  ForEachEngine(kAll, [&](Engine* engine) {
    VarHandle a = engine->NewVariable();
    CHECK(a->version() == 0);
    int value = 0;
    for (int i = 0; i < 5; ++i) {
      engine->PushSync([&value](RunContext) { ++value; }, Context::CPU(), {},
                       {a});
      engine->PushSync([](RunContext) {}, Context::CPU(), {a}, {});
    }
    REQUIRE(engine->WaitForVar(a).ok());
    CHECK(a->version() == 5);
    CHECK(value == 5);
  });
}

TEST_CASE("a variable both read and written counts once, as written") {
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice, EngineOptions());
  VarHandle a = engine->NewVariable();
  HeldOp held;
  engine->PushAsync(held.Fn(), Context::CPU(), {a, a}, {a, a});
  std::atomic<bool> reader_ran{false};
  engine->PushSync([&](RunContext) { reader_ran = true; }, Context::CPU(), {a},
                   {});
  Drain(engine.get());
  // Counted as a read, the held operation would have let the reader run.
  CHECK_FALSE(reader_ran.load());
  held.Release();
  // WaitForVar waits for the write only; the reader after it needs more.
  REQUIRE(engine->WaitForAll().ok());
  CHECK(reader_ran.load());
  CHECK(a->version() == 1);  // one write, not two
}

TEST_CASE("an operation with more variables than an operator keeps inline") {
  // Twelve variables (an operator holds eight inline), listed with repeats
  // and overlaps: each written one counts one write, each read one none,
  // and a write held on one of them holds the whole operation.
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice, EngineOptions());
  std::vector<VarHandle> vars;
  for (int i = 0; i < 12; ++i) vars.push_back(engine->NewVariable());
  HeldOp held;
  engine->PushAsync(held.Fn(), Context::CPU(), {}, {vars[5]});
  std::vector<VarHandle> reads(vars.begin(), vars.begin() + 10);
  reads.push_back(vars[0]);
  std::vector<VarHandle> writes = {vars[11], vars[8], vars[9], vars[10],
                                   vars[11]};
  std::atomic<bool> ran{false};
  engine->PushSync([&](RunContext) { ran = true; }, Context::CPU(), reads,
                   writes);
  Drain(engine.get());
  CHECK_FALSE(ran.load());  // it reads vars[5], written by the held op
  held.Release();
  REQUIRE(engine->WaitForAll().ok());
  CHECK(ran.load());
  for (int i = 0; i < 12; ++i) {
    INFO("variable " << i);
    CHECK(vars[i]->version() == (i >= 8 || i == 5 ? 1u : 0u));
  }
}

TEST_CASE("reads of one variable run together; a write waits for them") {
  EngineOptions options;
  options.cpu_worker_nthreads = 2;
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice, options);
  VarHandle a = engine->NewVariable();
  // Each reader waits until both are running: only concurrent reads finish.
  std::atomic<int> running{0};
  std::atomic<int> met{0};
  for (int i = 0; i < 2; ++i) {
    engine->PushSync(
        [&running, &met](RunContext) {
          ++running;
          if (WaitUntil([&running] { return running.load() == 2; })) ++met;
        },
        Context::CPU(), {a}, {});
  }
  std::atomic<int> seen_by_writer{-1};
  engine->PushSync([&](RunContext) { seen_by_writer = running.load(); },
                   Context::CPU(), {}, {a});
  REQUIRE(engine->WaitForVar(a).ok());
  CHECK(met.load() == 2);
  CHECK(seen_by_writer.load() == 2);
}

TEST_CASE("a long queue on one variable keeps push order, burst after burst") {
  // Held behind a write, hundreds of operations queue on one variable: past
  // the few entries a variable keeps inline, then (second burst) in the
  // ring kept from the first.
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice, EngineOptions());
  VarHandle a = engine->NewVariable();
  for (int burst = 0; burst < 2; ++burst) {
    INFO("burst " << burst);
    testing::HeldOp gate;
    engine->PushAsync(gate.Fn(), Context::CPU(), {}, {a});
    constexpr int kOps = 300;
    std::vector<int> writes;  // written only by writes, which run alone
    std::vector<int> seen(kOps, -1);
    int expected_writes = 0;
    std::vector<int> expected_seen(kOps, -1);
    for (int k = 0; k < kOps; ++k) {
      if (k % 4 == 3) {  // a read: sees every write pushed before it
        expected_seen[k] = expected_writes;
        engine->PushSync(
            [&seen, &writes, k](RunContext) {
              seen[k] = static_cast<int>(writes.size());
            },
            Context::CPU(), {a}, {});
      } else {
        ++expected_writes;
        engine->PushSync([&writes, k](RunContext) { writes.push_back(k); },
                         Context::CPU(), {}, {a});
      }
    }
    gate.Release();
    REQUIRE(engine->WaitForAll().ok());
    std::vector<int> expected_writes_order;
    for (int k = 0; k < kOps; ++k) {
      if (k % 4 != 3) expected_writes_order.push_back(k);
    }
    CHECK(writes == expected_writes_order);
    CHECK(seen == expected_seen);
  }
}

TEST_CASE("WaitForVar waits only for its variable") {
  ForEachEngine(kThreaded, [&](Engine* engine) {
    VarHandle a = engine->NewVariable();
    VarHandle b = engine->NewVariable();
    HeldOp held;
    engine->PushAsync(held.Fn(), Context::CPU(), {}, {a});
    engine->PushSync([](RunContext) {}, Context::CPU(), {}, {b});
    REQUIRE(engine->WaitForVar(b).ok());  // returns with `a` still held
    CHECK(b->version() == 1);
    CHECK(a->version() == 0);
    held.Release();
    REQUIRE(engine->WaitForVar(a).ok());
    CHECK(a->version() == 1);
  });
}

TEST_CASE("WaitForVar waits for earlier writes, not for earlier reads") {
  ForEachEngine(kThreaded, [&](Engine* engine) {
    VarHandle a = engine->NewVariable();
    HeldOp reader;
    engine->PushAsync(reader.Fn(), Context::CPU(), {a}, {});
    REQUIRE(WaitUntil([&] { return reader.started(); }));
    REQUIRE(engine->WaitForVar(a).ok());  // the read is still held
    CHECK(reader.started());
    // A write pushed after the read waits for it, and WaitForVar for the
    // write.
    std::atomic<bool> written{false};
    engine->PushSync([&](RunContext) { written = true; }, Context::CPU(), {},
                     {a});
    std::atomic<bool> waited{false};
    std::thread waiter([&] {
      CHECK(engine->WaitForVar(a).ok());
      waited = true;
    });
    Drain(engine);
    CHECK_FALSE(written.load());
    CHECK_FALSE(waited.load());
    reader.Release();
    waiter.join();
    CHECK(written.load());
    CHECK(a->version() == 1);
  });
}

TEST_CASE("WaitForVar inside an operation: reading returns, writing errs") {
  ForEachEngine(kAll, [&](Engine* engine) {
    Engine* e = engine;
    VarHandle a = engine->NewVariable();
    absl::Status in_read = absl::UnknownError("not run");
    absl::Status in_write = absl::UnknownError("not run");
    engine->PushSync([&](RunContext) { in_read = e->WaitForVar(a); },
                     Context::CPU(), {a}, {}, FnProperty::kNormal, 0, "reader");
    // Pushed while the reader may still run: the wait inside it must not
    // wait for this write, which waits for the reader.
    engine->PushSync([](RunContext) {}, Context::CPU(), {}, {a});
    engine->PushSync([&](RunContext) { in_write = e->WaitForVar(a); },
                     Context::CPU(), {}, {a}, FnProperty::kNormal, 0, "writer");
    REQUIRE(engine->WaitForAll().ok());
    CHECK(in_read.ok());
    CHECK(in_write.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(in_write.message() ==
          "WaitForVar called inside operation 'writer', which writes that "
          "variable: it would wait for itself");
    CHECK(a->version() == 2);
    // Outside any operation again, it waits as usual.
    CHECK(engine->WaitForVar(a).ok());
  });
}

TEST_CASE("the priority pool runs the highest priority first, FIFO on ties") {
  EngineOptions options;
  options.cpu_priority_nthreads = 1;
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice, options);
  std::atomic<bool> blocker_started{false};
  std::atomic<bool> go{false};
  engine->PushSync(
      [&](RunContext) {
        blocker_started = true;
        WaitUntil([&go] { return go.load(); });
      },
      Context::CPU(), {}, {}, FnProperty::kCPUPrioritized);
  REQUIRE(WaitUntil([&] { return blocker_started.load(); }));
  // Queued behind the blocker in this order: (priority, push index).
  const std::vector<int> priorities = {3, -2, 7, 3, 0, 7, -2, 5, 3, 1};
  std::mutex mu;
  std::vector<std::pair<int, int>> order;
  for (int i = 0; i < static_cast<int>(priorities.size()); ++i) {
    int priority = priorities[i];
    engine->PushSync(
        [&, priority, i](RunContext) {
          std::lock_guard<std::mutex> lock(mu);
          order.emplace_back(priority, i);
        },
        Context::CPU(), {}, {}, FnProperty::kCPUPrioritized, priority);
  }
  go = true;
  REQUIRE(engine->WaitForAll().ok());
  std::vector<std::pair<int, int>> expected = {{7, 2},  {7, 5}, {5, 7}, {3, 0},
                                               {3, 3},  {3, 8}, {1, 9}, {0, 4},
                                               {-2, 1}, {-2, 6}};
  CHECK(order == expected);
}

TEST_CASE("DeleteVariable runs after earlier users, then refuses new ones") {
  ForEachEngine(kThreaded, [&](Engine* engine) {
    VarHandle v = engine->NewVariable();
    std::mutex mu;
    std::vector<std::string> events;
    auto record = [&](const char* event) {
      std::lock_guard<std::mutex> lock(mu);
      events.push_back(event);
    };
    HeldOp held;
    engine->PushAsync(held.Fn(), Context::CPU(), {v}, {});
    engine->PushSync([&](RunContext) { record("write"); }, Context::CPU(), {},
                     {v});
    engine->DeleteVariable([&](RunContext) { record("delete"); },
                           Context::CPU(), v);
    std::atomic<bool> late_ran{false};
    engine->PushSync([&](RunContext) { late_ran = true; }, Context::CPU(), {v},
                     {}, FnProperty::kNormal, 0, "late reader");
    Drain(engine);
    {
      std::lock_guard<std::mutex> lock(mu);
      CHECK(events.empty());  // the held read keeps both waiting
    }
    record("release");
    held.Release();
    absl::Status status = engine->WaitForAll();
    CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
    CHECK_THAT(std::string(status.message()),
               Catch::Contains("operation 'late reader' uses a variable "
                               "already passed to DeleteVariable"));
    CHECK_FALSE(late_ran.load());
    CHECK(events == std::vector<std::string>{"release", "write", "delete"});
  });
}

TEST_CASE("DeleteVariable twice is reported, not a double free") {
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice, EngineOptions());
  VarHandle v = engine->NewVariable();
  engine->DeleteVariable(nullptr, Context::CPU(), v);
  engine->DeleteVariable(nullptr, Context::CPU(), v);
  CHECK(engine->WaitForVar(v).message() ==
        "WaitForVar on a variable already passed to DeleteVariable");
  absl::Status status = engine->WaitForAll();
  CHECK_THAT(std::string(status.message()),
             Catch::Contains("DeleteVariable called twice"));
  // Also once the first deletion has freed it.
  engine->DeleteVariable(nullptr, Context::CPU(), v);
  CHECK_THAT(std::string(engine->WaitForAll().message()),
             Catch::Contains("DeleteVariable called twice"));
}

TEST_CASE("kAsync operations run inline on the thread that makes them ready") {
  ForEachEngine(kAll, [&](Engine* engine) {
    VarHandle a = engine->NewVariable();
    std::thread::id ran_on;
    engine->PushAsync(
        [&](RunContext, CallbackOnComplete done) {
          ran_on = std::this_thread::get_id();
          done();
        },
        Context::CPU(), {}, {a}, FnProperty::kAsync);
    // Ready at push: it ran before PushAsync returned, on this thread.
    CHECK(ran_on == std::this_thread::get_id());
    CHECK(a->version() == 1);
  });
}

TEST_CASE("a failure skips its dependents, which inherit the error") {
  ForEachEngine(kAll, [&](Engine* engine) {
    VarHandle a = engine->NewVariable();
    VarHandle b = engine->NewVariable();
    VarHandle c = engine->NewVariable();
    VarHandle d = engine->NewVariable();
    std::atomic<int> ran_b{0}, ran_c{0}, ran_d{0};
    engine->PushAsync(
        [](RunContext, CallbackOnComplete done) {
          done(absl::DataLossError("boom"));
        },
        Context::CPU(), {}, {a}, FnProperty::kNormal, 0, "first");
    engine->PushSync([&](RunContext) { ++ran_b; }, Context::CPU(), {a}, {b});
    engine->PushSync([&](RunContext) { ++ran_c; }, Context::CPU(), {b}, {c});
    engine->PushSync([&](RunContext) { ++ran_d; }, Context::CPU(), {}, {d});

    absl::Status status = engine->WaitForVar(c);
    CHECK(status.code() == absl::StatusCode::kDataLoss);
    CHECK(status.message() == "operation 'first' failed: boom");
    CHECK(engine->WaitForVar(c).ok());  // raised once
    CHECK(engine->WaitForVar(d).ok());
    CHECK(ran_b == 0);
    CHECK(ran_c == 0);
    CHECK(ran_d == 1);
    CHECK(c->version() == 1);  // a skipped write still completes

    // `b` still carries the error: its next reader is skipped too, until
    // the error is taken.
    engine->PushSync([&](RunContext) { ++ran_c; }, Context::CPU(), {b}, {c});
    CHECK(engine->WaitForVar(c).code() == absl::StatusCode::kDataLoss);
    CHECK(engine->WaitForVar(b).code() == absl::StatusCode::kDataLoss);
    engine->PushSync([&](RunContext) { ++ran_c; }, Context::CPU(), {b}, {c});
    CHECK(engine->WaitForVar(c).ok());
    CHECK(ran_c == 1);

    status = engine->WaitForAll();
    CHECK(status.message() == "operation 'first' failed: boom");
    CHECK(engine->WaitForAll().ok());
  });
}

TEST_CASE("a throwing operation fails with its message") {
  ForEachEngine(kAll, [&](Engine* engine) {
    VarHandle a = engine->NewVariable();
    engine->PushSync(
        [](RunContext) { throw std::runtime_error("no such file: x.bin"); },
        Context::CPU(), {}, {a}, FnProperty::kNormal, 0, "loader");
    absl::Status status = engine->WaitForVar(a);
    CHECK(status.code() == absl::StatusCode::kInternal);
    CHECK(status.message() == "operation 'loader' threw: no such file: x.bin");
    CHECK_FALSE(engine->WaitForAll().ok());
  });
}

TEST_CASE("a dropped completion callback fails the operation, no hang") {
  ForEachEngine(kAll, [&](Engine* engine) {
    VarHandle a = engine->NewVariable();
    engine->PushAsync([](RunContext, CallbackOnComplete) {}, Context::CPU(), {},
                      {a}, FnProperty::kNormal, 0, "forgetful");
    absl::Status status = engine->WaitForVar(a);
    CHECK(status.message() ==
          "operation 'forgetful' dropped its completion callback without "
          "calling it");
    // Calling twice: the second call is ignored.
    engine->PushAsync(
        [](RunContext, CallbackOnComplete done) {
          done();
          done();
        },
        Context::CPU(), {}, {a}, FnProperty::kNormal, 0, "twice");
    CHECK(engine->WaitForVar(a).ok());
    CHECK(a->version() == 2);
    engine->WaitForAll().IgnoreError();
  });
}

TEST_CASE("a callback completed later from another thread") {
  ForEachEngine(kAll, [&](Engine* engine) {
    VarHandle a = engine->NewVariable();
    std::vector<std::thread> helpers;
    std::mutex mu;
    int value = 0;
    for (int i = 0; i < 20; ++i) {
      engine->PushAsync(
          [&](RunContext, CallbackOnComplete done) {
            std::lock_guard<std::mutex> lock(mu);
            helpers.emplace_back([&value, done] {
              ++value;  // ordered by `a`, not by a lock
              done();
            });
          },
          Context::CPU(), {}, {a});
    }
    REQUIRE(engine->WaitForVar(a).ok());
    CHECK(value == 20);
    // The last helper may complete before its emplace_back has returned.
    std::lock_guard<std::mutex> lock(mu);
    for (std::thread& helper : helpers) helper.join();
  });
}

TEST_CASE("a thread waiting in WaitForAll runs queued CPU operations") {
  // The one CPU worker is held by `first` until `second` has run: only the
  // waiting thread can run `second`. Bounded, so that a waiter that does
  // not help fails the test instead of hanging it.
  EngineOptions options;
  options.cpu_worker_nthreads = 1;
  auto engine = Engine::Create(EngineType::kThreadedPerDevice, options);
  VarHandle a = engine->NewVariable();
  VarHandle b = engine->NewVariable();
  std::atomic<bool> first_started{false}, second_ran{false};
  bool first_saw_second = false;
  engine->PushSync(
      [&](RunContext) {
        first_started = true;
        first_saw_second = WaitUntil([&] { return second_ran.load(); });
      },
      Context::CPU(), {}, {a});
  REQUIRE(WaitUntil([&] { return first_started.load(); }));
  std::thread::id ran_on;
  engine->PushSync(
      [&](RunContext) {
        ran_on = std::this_thread::get_id();
        second_ran = true;
      },
      Context::CPU(), {}, {b});
  REQUIRE(engine->WaitForAll().ok());
  CHECK(first_saw_second);
  CHECK(ran_on == std::this_thread::get_id());
}

TEST_CASE("operations pushed from inside operations") {
  ForEachEngine(kAll, [&](Engine* engine) {
    Engine* e = engine;
    VarHandle a = engine->NewVariable();
    std::vector<int> order;
    engine->PushSync(
        [&](RunContext) {
          order.push_back(1);
          // Reads `a`, which this running operation writes: it must wait.
          e->PushSync([&](RunContext) { order.push_back(2); }, Context::CPU(),
                      {a}, {});
        },
        Context::CPU(), {}, {a});
    REQUIRE(engine->WaitForAll().ok());
    CHECK(order == std::vector<int>{1, 2});
  });
}

TEST_CASE("many threads pushing at once: each variable's order holds") {
  // Every pusher appends to its own log in push order and adds to one
  // shared total, on workers that take from their own queues and each
  // other's: a lost, doubled or reordered operation shows in the logs, and
  // unordered access to the plain data below in ThreadSanitizer.
  constexpr int kPushers = 6;
  constexpr int kOpsEach = 2000;
  for (EngineType type : kThreaded) {
    INFO(EngineTypeName(type));
    EngineOptions options;
    options.cpu_worker_nthreads = 4;
    options.pool_nthreads = 4;
    std::unique_ptr<Engine> engine = Engine::Create(type, options);
    VarHandle total_var = engine->NewVariable("total");
    int64_t total = 0;
    std::vector<std::vector<int>> logs(kPushers);
    std::vector<VarHandle> own;
    for (int p = 0; p < kPushers; ++p) own.push_back(engine->NewVariable());
    std::vector<std::thread> pushers;
    for (int p = 0; p < kPushers; ++p) {
      pushers.emplace_back([&, p] {
        for (int i = 0; i < kOpsEach; ++i) {
          if (i % 3 == 0) {
            engine->PushSync([&total](RunContext) { ++total; }, Context::CPU(),
                             {own[p]}, {total_var});
          }
          engine->PushSync([&logs, p, i](RunContext) { logs[p].push_back(i); },
                           Context::CPU(), {}, {own[p]});
        }
      });
    }
    for (std::thread& pusher : pushers) pusher.join();
    REQUIRE(engine->WaitForAll().ok());
    int64_t expected_total = 0;
    for (int p = 0; p < kPushers; ++p) {
      INFO("pusher " << p);
      REQUIRE(logs[p].size() == static_cast<size_t>(kOpsEach));
      for (int i = 0; i < kOpsEach; ++i) CHECK(logs[p][i] == i);
      expected_total += (kOpsEach + 2) / 3;
    }
    CHECK(total == expected_total);
  }
}

TEST_CASE("a burst after an idle spell wakes every parked worker") {
  // Four operations that each wait until all four run finish only if the
  // pushes wake a worker for each, whether the workers had parked (between
  // rounds, while this thread waits) or were still polling. A push that
  // wakes a parked worker takes it off the sleepers, so the next push must
  // wake another. Bounded: a lost wake fails a round instead of hanging.
  constexpr int kWorkers = 4;
  for (EngineType type : kThreaded) {
    INFO(EngineTypeName(type));
    EngineOptions options;
    options.cpu_worker_nthreads = kWorkers;
    options.pool_nthreads = kWorkers;
    std::unique_ptr<Engine> engine = Engine::Create(type, options);
    for (int round = 0; round < 20; ++round) {
      INFO("round " << round);
      std::atomic<int> running{0};
      std::atomic<int> met{0};
      std::vector<VarHandle> vars;
      for (int i = 0; i < kWorkers; ++i) vars.push_back(engine->NewVariable());
      for (VarHandle var : vars) {
        engine->PushSync(
            [&](RunContext) {
              ++running;
              if (WaitUntil([&] { return running.load() == kWorkers; },
                            std::chrono::seconds(10))) {
                ++met;
              }
            },
            Context::CPU(), {}, {var});
      }
      for (VarHandle var : vars) REQUIRE(engine->WaitForVar(var).ok());
      REQUIRE(met.load() == kWorkers);
      for (VarHandle var : vars) {
        engine->DeleteVariable(nullptr, Context::CPU(), var);
      }
    }
  }
}

TEST_CASE("shutdown: pending operations finish, new pushes are refused") {
  for (EngineType type : kThreaded) {
    INFO(EngineTypeName(type));
    std::unique_ptr<Engine> engine = Engine::Create(type, EngineOptions());
    VarHandle a = engine->NewVariable();
    VarHandle b = engine->NewVariable();
    HeldOp held;
    engine->PushAsync(held.Fn(), Context::CPU(), {}, {a});
    int after_held = 0;
    engine->PushSync([&](RunContext) { ++after_held; }, Context::CPU(), {a},
                     {});
    engine->NotifyShutdown();
    std::atomic<bool> refused_ran{false};
    engine->PushSync([&](RunContext) { refused_ran = true; }, Context::CPU(),
                     {}, {b}, FnProperty::kNormal, 0, "too late");
    absl::Status status = engine->WaitForVar(b);
    CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(status.message() ==
          "engine is shutting down: operation 'too late' was not run");
    CHECK_FALSE(refused_ran.load());
    // The destructor waits for the held operation, released meanwhile by
    // another thread.
    std::thread releaser([&held] { held.Release(); });
    engine.reset();
    releaser.join();
    CHECK(after_held == 1);
  }
}

TEST_CASE("destroying an engine completes what is pending") {
  for (EngineType type : kAll) {
    INFO(EngineTypeName(type));
    std::atomic<int> ran{0};
    {
      std::unique_ptr<Engine> engine = Engine::Create(type, EngineOptions());
      VarHandle a = engine->NewVariable();
      for (int i = 0; i < 200; ++i) {
        engine->PushSync([&ran](RunContext) { ++ran; }, Context::CPU(), {},
                         {a});
      }
      engine->DeleteVariable(nullptr, Context::CPU(), a);
    }
    CHECK(ran == 200);
  }
}

TEST_CASE("contexts the engine cannot serve fail the operation by name") {
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice, EngineOptions());
  VarHandle a = engine->NewVariable();
  std::atomic<bool> ran{false};
  engine->PushSync([&](RunContext) { ran = true; }, Context::CPU(64), {}, {a},
                   FnProperty::kNormal, 0, "far away");
  CHECK(engine->WaitForVar(a).message() ==
        "operation 'far away' asks for cpu(64): device indices go from 0 to "
        "63");
  if (cuda::DeviceAvailable(0).ok()) {
    void* stream = nullptr;
    engine->PushSync([&](RunContext rctx) { stream = rctx.stream; },
                     Context::GPU(0), {}, {a});
    REQUIRE(engine->WaitForVar(a).ok());
    CHECK(stream != nullptr);
  } else {
    engine->PushSync([&](RunContext) { ran = true; }, Context::GPU(0), {}, {a},
                     FnProperty::kNormal, 0, "kernel");
    absl::Status status = engine->WaitForVar(a);
    CHECK_THAT(std::string(status.message()),
               Catch::StartsWith("operation 'kernel' asks for gpu(0): "));
    std::printf("without a GPU: %s\n", std::string(status.message()).c_str());
  }
  CHECK_FALSE(ran.load());
}

TEST_CASE("engine types and thread counts from their names") {
  CHECK(*ParseEngineType("NaiveEngine") == EngineType::kNaive);
  CHECK(*ParseEngineType("ThreadedEnginePooled") ==
        EngineType::kThreadedPooled);
  CHECK(*ParseEngineType("ThreadedEnginePerDevice") ==
        EngineType::kThreadedPerDevice);
  CHECK(ParseEngineType("ThreadedEngine").status().message() ==
        "unknown engine type 'ThreadedEngine' (expected NaiveEngine, "
        "ThreadedEnginePooled or ThreadedEnginePerDevice)");
  for (EngineType type : kAll) {
    CHECK(*ParseEngineType(EngineTypeName(type)) == type);
  }

  setenv("ACTORFLOW_CPU_PRIORITY_NTHREADS", "3", 1);
  setenv("ACTORFLOW_GPU_COPY_NTHREADS", "1", 1);
  absl::StatusOr<EngineOptions> options = EngineOptions::FromEnv();
  REQUIRE(options.ok());
  CHECK(options->cpu_priority_nthreads == 3);
  CHECK(options->gpu_copy_nthreads == 1);
  CHECK(options->cpu_worker_nthreads == 1);
  setenv("ACTORFLOW_CPU_WORKER_NTHREADS", "two", 1);
  CHECK(EngineOptions::FromEnv().status().message() ==
        "$ACTORFLOW_CPU_WORKER_NTHREADS='two': expected a thread count from 1 "
        "to 256");
  setenv("ACTORFLOW_CPU_WORKER_NTHREADS", "0", 1);
  CHECK_FALSE(EngineOptions::FromEnv().ok());
  // Create warns and falls back to the defaults.
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice);
  VarHandle a = engine->NewVariable();
  engine->PushSync([](RunContext) {}, Context::CPU(), {}, {a});
  CHECK(engine->WaitForVar(a).ok());
  unsetenv("ACTORFLOW_CPU_WORKER_NTHREADS");
  unsetenv("ACTORFLOW_CPU_PRIORITY_NTHREADS");
  unsetenv("ACTORFLOW_GPU_COPY_NTHREADS");
}

TEST_CASE("Engine::Get is one process-wide engine") {
  Engine* engine = Engine::Get();
  CHECK(engine == Engine::Get());
  if (std::getenv("ACTORFLOW_ENGINE_TYPE") == nullptr) {
    CHECK(engine->type() == EngineType::kThreadedPerDevice);
  }
  VarHandle a = engine->NewVariable();
  int value = 0;
  engine->PushSync([&value](RunContext) { value = 42; }, Context::CPU(), {},
                   {a});
  REQUIRE(engine->WaitForVar(a).ok());
  CHECK(value == 42);
}

}  // namespace
}  // namespace actorflow::engine
