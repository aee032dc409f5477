#include "thread/thread_pool.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <memory>
#include <random>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "tests/test_util.h"
#include "thread/balanced_splitter.h"
#include "thread/blocking_counter.h"
#include "thread/multi_thread_loop.h"

namespace actorflow::internal {
namespace {

TEST_CASE(
    "ThreadPool runs every scheduled closure, also those queued at "
    "destruction",
    "[thread_pool]") {
  std::atomic<int> runs{0};
  {
    ThreadPool pool(3);
    CHECK(pool.size() == 3);
    for (int i = 0; i < 10'000; ++i) pool.Schedule([&runs] { ++runs; });
  }
  CHECK(runs == 10'000);
  ThreadPool at_least_one(0);
  CHECK(at_least_one.size() == 1);
}

TEST_CASE(
    "every worker is woken for queued work, whether the others poll or "
    "are parked when it comes",
    "[thread_pool]") {
  // Each round's closures wait for one another: the round ends only once
  // all of them run at the same time, one per worker. A push that finds a
  // worker polling wakes no one (thread/worker_pool.h); the workers must
  // still be woken one after another. The pause before a round varies
  // whether the workers are still polling or already parked.
  uint64_t seed = testing::TestSeed("pool wakes");
  std::mt19937_64 rng(seed);
  constexpr int kWorkers = 4;
  ThreadPool pool(kWorkers);
  for (int round = 0; round < 200; ++round) {
    BlockingCounter arrived(kWorkers);
    BlockingCounter finished(kWorkers);
    std::atomic<int> timed_out{0};
    for (int i = 0; i < kWorkers; ++i) {
      pool.Schedule([&] {
        arrived.Decrement();
        if (!arrived.WaitFor(absl::Seconds(30))) timed_out.fetch_add(1);
        finished.Decrement();
      });
    }
    INFO("round " << round << " (seed " << seed << ")");
    REQUIRE(finished.WaitFor(absl::Seconds(60)));
    REQUIRE(timed_out == 0);
    const int64_t pause_ns = static_cast<int64_t>(rng() % 200'000);
    const int64_t until = absl::GetCurrentTimeNanos() + pause_ns;
    while (absl::GetCurrentTimeNanos() < until) {
    }
  }
}

TEST_CASE("BlockingCounter releases waiters exactly at zero",
          "[blocking_counter]") {
  constexpr int kDecrementers = 4;
  constexpr int kEach = 10'000;
  BlockingCounter counter(kDecrementers * kEach);
  std::atomic<int> zeros_seen{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kDecrementers; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kEach; ++i) {
        if (counter.Decrement() == 0) ++zeros_seen;
      }
    });
  }
  counter.Wait();
  CHECK(counter.value() == 0);
  for (auto& t : threads) t.join();
  CHECK(zeros_seen == 1);
}

TEST_CASE("BlockingCounter::WaitFor times out while the count is above zero",
          "[blocking_counter]") {
  BlockingCounter counter(2);
  CHECK_FALSE(counter.WaitFor(absl::Milliseconds(20)));
  CHECK(counter.Decrement(2) == 0);
  CHECK(counter.WaitFor(absl::Milliseconds(0)));
  BlockingCounter zero(0);
  zero.Wait();  // returns at once
  CHECK(zero.WaitFor(absl::ZeroDuration()));
}

TEST_CASE("BalancedSplitter covers the range with sizes differing by <= 1",
          "[balanced_splitter]") {
  uint64_t seed = testing::TestSeed("balanced splitter");
  std::mt19937_64 rng(seed);
  for (int trial = 0; trial < 2000; ++trial) {
    int64_t total = rng() % 1000;
    int64_t parts = 1 + rng() % 40;
    BalancedSplitter splitter(total, parts);
    REQUIRE(splitter.parts() == parts);
    int64_t expected_begin = 0;
    int64_t smallest = total, largest = 0;
    for (int64_t i = 0; i < parts; ++i) {
      Range r = splitter.At(i);
      REQUIRE(r.begin == expected_begin);
      REQUIRE(r.end >= r.begin);
      expected_begin = r.end;
      smallest = std::min(smallest, r.size());
      largest = std::max(largest, r.size());
      // The larger ranges come first.
      if (i > 0) REQUIRE(splitter.At(i - 1).size() >= r.size());
    }
    REQUIRE(expected_begin == total);
    REQUIRE(largest - smallest <= 1);
  }
  // Exact values for one case.
  BalancedSplitter ten_by_three(10, 3);
  CHECK(ten_by_three.At(0).begin == 0);
  CHECK(ten_by_three.At(0).end == 4);
  CHECK(ten_by_three.At(1).end == 7);
  CHECK(ten_by_three.At(2).end == 10);
}

void CheckEachIndexOnce(int64_t n, ThreadPool* pool) {
  std::vector<std::atomic<int>> calls(n);
  MultiThreadLoop(
      n, [&calls](int64_t i) { calls[i].fetch_add(1); }, pool);
  for (int64_t i = 0; i < n; ++i) REQUIRE(calls[i].load() == 1);
}

TEST_CASE("MultiThreadLoop calls fn once per index", "[multi_thread_loop]") {
  uint64_t seed = testing::TestSeed("multi thread loop");
  std::mt19937_64 rng(seed);
  ThreadPool pool(3);
  for (int64_t n : {0, 1, 2, 3, 4, 5, 1000}) CheckEachIndexOnce(n, &pool);
  for (int trial = 0; trial < 50; ++trial) {
    CheckEachIndexOnce(static_cast<int64_t>(rng() % 5000), &pool);
  }
  // The default pool.
  std::atomic<int64_t> sum{0};
  MultiThreadLoop(100, [&sum](int64_t i) { sum += i; });
  CHECK(sum == 4950);
}

TEST_CASE(
    "MultiThreadLoop inside pool tasks finishes even with every "
    "worker busy",
    "[multi_thread_loop]") {
  ThreadPool pool(2);
  constexpr int kOuter = 6;
  BlockingCounter done(kOuter);
  std::atomic<int64_t> inner_calls{0};
  for (int o = 0; o < kOuter; ++o) {
    pool.Schedule([&] {
      MultiThreadLoop(
          1000, [&](int64_t) { inner_calls.fetch_add(1); }, &pool);
      done.Decrement();
    });
  }
  REQUIRE(done.WaitFor(absl::Seconds(60)));
  CHECK(inner_calls == kOuter * 1000);
}

}  // namespace
}  // namespace actorflow::internal
