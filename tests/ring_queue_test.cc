#include "thread/ring_queue.h"

#include <catch2/catch.hpp>
#include <deque>
#include <random>
#include <utility>
#include <vector>

#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

// Random pushes and pops against a std::deque; `push_percent(step, size)`
// is the chance of a push. With `every_item`, each step compares every
// item (at()), not only the count.
template <size_t kInline, typename PushPercent>
void CheckAgainstDeque(RingQueue<int, kInline>& queue, std::mt19937_64& rng,
                       int steps, PushPercent push_percent, bool every_item) {
  std::deque<int> model;
  int next = 0;
  for (int step = 0; step < steps; ++step) {
    bool push = model.empty() || rng() % 100 < push_percent(step, model.size());
    if (push) {
      queue.Push(next);
      model.push_back(next++);
    } else {
      REQUIRE(queue.Pop() == model.front());
      model.pop_front();
    }
    REQUIRE(queue.size() == model.size());
    REQUIRE(queue.empty() == model.empty());
    if (!every_item) continue;
    for (size_t i = 0; i < model.size(); ++i) REQUIRE(queue.at(i) == model[i]);
  }
}

TEST_CASE("RingQueue is FIFO across wrap-around and growth", "[ring_queue]") {
  uint64_t seed = testing::TestSeed("ring queue vs deque");
  std::mt19937_64 rng(seed);
  RingQueue<int> queue(4);
  // Bias towards pushes early so the queue grows, then balance.
  CheckAgainstDeque(
      queue, rng, 100'000,
      [](int step, size_t) { return step < 50'000 ? 55u : 50u; }, false);
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

TEST_CASE("RingQueue keeps up to kInline items inside itself, then grows",
          "[ring_queue]") {
  uint64_t seed = testing::TestSeed("inline ring queue vs deque");
  std::mt19937_64 rng(seed);
  RingQueue<int, 2> queue(2);
  CHECK(queue.capacity() == 2);
  // Mostly within two items (inline), now and then past them (heap).
  CheckAgainstDeque(
      queue, rng, 20'000, [](int, size_t size) { return size < 2 ? 60u : 45u; },
      true);
  CHECK(queue.capacity() > 2);
}

TEST_CASE("a moved RingQueue keeps its items, inline or not", "[ring_queue]") {
  for (int items : {0, 1, 2, 3, 9}) {
    INFO(items << " items");
    RingQueue<int, 2> queue(1);
    // Wrapped around: the oldest item is not in the first slot.
    queue.Push(-1);
    queue.Pop();
    for (int i = 0; i < items; ++i) queue.Push(i);
    RingQueue<int, 2> moved(std::move(queue));
    REQUIRE(moved.size() == static_cast<size_t>(items));
    for (int i = 0; i < items; ++i) CHECK(moved.Pop() == i);
    CHECK(moved.empty());
    moved.Push(7);  // still usable after the move
    CHECK(moved.front() == 7);
  }
  // As an actor's slots hold them: in a container that moves them when it
  // grows.
  std::vector<RingQueue<int, 2>> rings;
  for (int r = 0; r < 10; ++r) {
    rings.emplace_back(r % 3 == 0 ? 4 : 2);
    for (int i = 0; i <= r % 4; ++i) rings.back().Push(10 * r + i);
  }
  for (int r = 0; r < 10; ++r) {
    for (int i = 0; i <= r % 4; ++i) CHECK(rings[r].Pop() == 10 * r + i);
    CHECK(rings[r].empty());
  }
  RingQueue<int, 2> cleared(2);
  cleared.Push(1);
  cleared.Push(2);
  cleared.clear();
  CHECK(cleared.empty());
}

}  // namespace
}  // namespace actorflow::internal
