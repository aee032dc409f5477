// The deferred-callback protocol over the host asynchronous stream: work
// runs in order on the stream's worker, a callback never runs before the
// work queued ahead of its event is done, callbacks keep their order, errors
// reach them, and stopping with callbacks pending runs them all.
#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "tests/test_util.h"
#include "thread/callback_poller.h"
#include "thread/host_async_stream.h"

namespace actorflow::internal {
namespace {

using testing::WaitUntil;

TEST_CASE("host stream work runs in order on its own worker") {
  HostAsyncStream stream;
  std::vector<int> order;
  std::thread::id worker;
  for (int i = 0; i < 1000; ++i) {
    stream.Enqueue([&, i] {
      order.push_back(i);
      worker = std::this_thread::get_id();
      return absl::OkStatus();
    });
  }
  absl::StatusOr<AsyncStream::EventToken> event = stream.RecordEvent();
  REQUIRE(event.ok());
  REQUIRE(stream.WaitEvent(*event).ok());
  CHECK(stream.completed() == 1000);
  CHECK(worker != std::this_thread::get_id());
  std::vector<int> expected(1000);
  for (int i = 0; i < 1000; ++i) expected[i] = i;
  CHECK(order == expected);
}

TEST_CASE("a callback never runs before the work queued ahead of it") {
  HostAsyncStream stream;
  CallbackPoller poller("test-poller");
  std::atomic<bool> gate{false};
  std::atomic<bool> work_done{false};
  std::atomic<bool> ran{false};
  std::atomic<bool> saw_work_done{false};
  stream.Enqueue([&] {
    WaitUntil([&] { return gate.load(); });
    work_done = true;
    return absl::OkStatus();
  });
  REQUIRE(poller
              .AddCallback(&stream,
                           [&](absl::Status status) {
                             saw_work_done = work_done.load() && status.ok();
                             ran = true;
                           })
              .ok());
  // The poller is now blocked on the event, with the work still gated.
  REQUIRE(WaitUntil([&] { return stream.waiting() == 1; }));
  CHECK_FALSE(ran.load());
  gate = true;
  REQUIRE(WaitUntil([&] { return ran.load(); }));
  CHECK(saw_work_done.load());
}

TEST_CASE("callbacks run in the order they were added, each after its work") {
  uint64_t seed = testing::TestSeed("callback_order");
  std::mt19937_64 rng(seed);
  constexpr int kStreams = 3;
  // Declared before the streams and the poller, so they outlive the work
  // and callbacks that the streams' destructors still run.
  std::atomic<int> done_work[kStreams] = {};
  std::mutex mu;
  std::vector<int> order;  // callback ids as run
  std::atomic<int> early{0};
  HostAsyncStream streams[kStreams];
  CallbackPoller poller("test-poller");
  int next_id = 0;
  for (int step = 0; step < 600; ++step) {
    int s = static_cast<int>(rng() % kStreams);
    if (rng() % 2 == 0) {
      streams[s].Enqueue([&done_work, s] {
        ++done_work[s];
        return absl::OkStatus();
      });
    } else {
      int id = next_id++;
      // Work items queued on this stream so far: all must be done.
      uint64_t needed = streams[s].RecordEvent().value();
      REQUIRE(poller
                  .AddCallback(&streams[s],
                               [&, s, id, needed](absl::Status status) {
                                 if (!status.ok() ||
                                     static_cast<uint64_t>(
                                         done_work[s].load()) < needed) {
                                   ++early;
                                 }
                                 std::lock_guard<std::mutex> lock(mu);
                                 order.push_back(id);
                               })
                  .ok());
    }
  }
  poller.Stop();
  CHECK(early.load() == 0);
  std::vector<int> expected(next_id);
  for (int i = 0; i < next_id; ++i) expected[i] = i;
  CHECK(order == expected);
}

TEST_CASE("a failed work item reaches the callbacks after it, not before") {
  HostAsyncStream stream;
  CallbackPoller poller("test-poller");
  std::mutex mu;
  std::vector<absl::Status> seen;
  auto record = [&](absl::Status status) {
    std::lock_guard<std::mutex> lock(mu);
    seen.push_back(std::move(status));
  };
  stream.Enqueue([] { return absl::OkStatus(); });
  REQUIRE(poller.AddCallback(&stream, record).ok());
  stream.Enqueue([] { return absl::DataLossError("kernel failed"); });
  REQUIRE(poller.AddCallback(&stream, record).ok());
  stream.Enqueue([] { return absl::OkStatus(); });
  REQUIRE(poller.AddCallback(&stream, record).ok());
  poller.Stop();
  REQUIRE(seen.size() == 3);
  CHECK(seen[0].ok());
  CHECK(seen[1].message() == "kernel failed");
  CHECK(seen[2].message() == "kernel failed");  // sticky, like CUDA
}

TEST_CASE("stopping with callbacks pending runs them all, then refuses") {
  HostAsyncStream stream;
  CallbackPoller poller("test-poller");
  std::atomic<bool> gate{false};
  std::atomic<int> ran{0};
  stream.Enqueue([&] {
    WaitUntil([&] { return gate.load(); });
    return absl::OkStatus();
  });
  for (int i = 0; i < 10; ++i) {
    REQUIRE(poller.AddCallback(&stream, [&](absl::Status) { ++ran; }).ok());
  }
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    poller.Stop();
    stopped = true;
  });
  REQUIRE(WaitUntil([&] { return stream.waiting() == 1; }));
  CHECK_FALSE(stopped.load());
  CHECK(ran.load() == 0);
  gate = true;
  stopper.join();
  CHECK(ran.load() == 10);
  absl::Status late = poller.AddCallback(&stream, [&](absl::Status) { ++ran; });
  CHECK(late.message() == "callback poller test-poller is stopped");
  CHECK(ran.load() == 10);
}

TEST_CASE("destroying a host stream finishes its queued work") {
  std::atomic<int> ran{0};
  {
    HostAsyncStream stream;
    for (int i = 0; i < 100; ++i) {
      stream.Enqueue([&] {
        ++ran;
        return absl::OkStatus();
      });
    }
  }
  CHECK(ran.load() == 100);
}

}  // namespace
}  // namespace actorflow::internal
