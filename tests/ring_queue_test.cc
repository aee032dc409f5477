#include "thread/ring_queue.h"

#include <catch2/catch.hpp>
#include <deque>
#include <random>

#include "tests/test_util.h"

namespace actorflow {
namespace {

TEST_CASE("RingQueue is FIFO across wrap-around and growth", "[ring_queue]") {
  uint64_t seed = testing::TestSeed("ring queue vs deque");
  std::mt19937_64 rng(seed);
  RingQueue<int> queue(4);
  std::deque<int> model;
  int next = 0;
  for (int step = 0; step < 100'000; ++step) {
    // Bias towards pushes early so the queue grows, then balance.
    bool push = model.empty() || rng() % 100 < (step < 50'000 ? 55u : 50u);
    if (push) {
      queue.Push(next);
      model.push_back(next++);
    } else {
      REQUIRE(queue.Pop() == model.front());
      model.pop_front();
    }
    REQUIRE(queue.size() == model.size());
    REQUIRE(queue.empty() == model.empty());
  }
}

TEST_CASE("RingQueue stops allocating once it has its working size",
          "[ring_queue]") {
  RingQueue<int> queue(1);
  for (int i = 0; i < 100; ++i) queue.Push(i);
  size_t capacity = queue.capacity();
  CHECK(capacity >= 100);
  for (int round = 0; round < 1000; ++round) {
    for (int i = 0; i < 100; ++i) queue.Pop();
    for (int i = 0; i < 100; ++i) queue.Push(i);
  }
  CHECK(queue.capacity() == capacity);
}

}  // namespace
}  // namespace actorflow
