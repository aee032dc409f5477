#include "thread/thread.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <thread>
#include <vector>

#include "tests/test_util.h"
#include "thread/blocking_counter.h"

namespace actorflow::internal {
namespace {

struct TestMsg {
  int64_t value = 0;
};

// Counts messages; a message with value > 0 is re-sent to the thread itself
// with value - 1, so one message from outside starts a chain of self-sends.
class CountdownHandler : public MsgHandler<TestMsg> {
 public:
  explicit CountdownHandler(BlockingCounter* chain_done)
      : chain_done_(chain_done) {}
  void set_thread(Thread<TestMsg>* thread) { thread_ = thread; }

  void Handle(const TestMsg& msg) override {
    handled_.fetch_add(1);
    if (!thread_->InThisThread()) wrong_thread_.fetch_add(1);
    if (msg.value > 0) {
      if (!thread_->Send(TestMsg{msg.value - 1}).ok())
        send_errors_.fetch_add(1);
    } else if (chain_done_ != nullptr) {
      chain_done_->Decrement();
    }
  }

  std::atomic<int64_t> handled_{0};
  std::atomic<int64_t> wrong_thread_{0};
  std::atomic<int64_t> send_errors_{0};

 private:
  BlockingCounter* chain_done_;
  Thread<TestMsg>* thread_ = nullptr;
};

TEST_CASE("self-sends take the local queue, others the channel", "[thread]") {
  BlockingCounter done(1);
  CountdownHandler handler(&done);
  CpuThread<TestMsg> thread(StreamKey{}, &handler);
  handler.set_thread(&thread);
  thread.Start();
  CHECK_FALSE(thread.InThisThread());
  REQUIRE(thread.Send(TestMsg{1000}).ok());
  done.Wait();
  thread.Stop();
  CHECK(handler.handled_ == 1001);
  CHECK(handler.wrong_thread_ == 0);
  CHECK(handler.send_errors_ == 0);
  CHECK(thread.channel_msg_count() == 1);
  CHECK(thread.local_msg_count() == 1000);
}

// Forwards each message to a peer thread until its value reaches zero.
class RelayHandler : public MsgHandler<TestMsg> {
 public:
  RelayHandler(BlockingCounter* done) : done_(done) {}
  void set_peer(Thread<TestMsg>* peer) { peer_ = peer; }
  void Handle(const TestMsg& msg) override {
    ++handled_;
    if (msg.value == 0) {
      done_->Decrement();
    } else if (!peer_->Send(TestMsg{msg.value - 1}).ok()) {
      send_errors_.fetch_add(1);
    }
  }
  std::atomic<int64_t> handled_{0};
  std::atomic<int64_t> send_errors_{0};

 private:
  BlockingCounter* done_;
  Thread<TestMsg>* peer_ = nullptr;
};

TEST_CASE("cross-thread sends arrive, through the channel", "[thread]") {
  constexpr int kBalls = 8;
  constexpr int64_t kHops = 20'000;
  BlockingCounter done(kBalls);
  RelayHandler ha(&done), hb(&done);
  CpuThread<TestMsg> a(StreamKey{.stream_index = 0}, &ha);
  CpuThread<TestMsg> b(StreamKey{.stream_index = 1}, &hb);
  ha.set_peer(&b);
  hb.set_peer(&a);
  a.Start();
  b.Start();
  for (int i = 0; i < kBalls; ++i) REQUIRE(a.Send(TestMsg{kHops}).ok());
  REQUIRE(done.WaitFor(absl::Seconds(120)));
  a.Stop();
  b.Stop();
  CHECK(ha.send_errors_ == 0);
  CHECK(hb.send_errors_ == 0);
  CHECK(ha.handled_ + hb.handled_ == kBalls * (kHops + 1));
  CHECK(a.local_msg_count() + b.local_msg_count() == 0);
}

TEST_CASE(
    "stop is clean with messages in flight: everything accepted is "
    "handled once, later sends fail",
    "[thread]") {
  for (int round = 0; round < 10; ++round) {
    CountdownHandler handler(nullptr);
    CpuThread<TestMsg> thread(StreamKey{.stream_index = 3}, &handler);
    handler.set_thread(&thread);
    thread.Start();
    constexpr int kSenders = 3;
    std::atomic<int64_t> accepted{0};
    std::atomic<int64_t> rejected{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> senders;
    for (int s = 0; s < kSenders; ++s) {
      senders.emplace_back([&] {
        while (!go) std::this_thread::yield();
        // Each accepted message also triggers 2 local self-sends.
        for (int i = 0; i < 200'000; ++i) {
          if (thread.Send(TestMsg{2}).ok()) {
            accepted.fetch_add(1);
          } else {
            rejected.fetch_add(1);
            return;
          }
        }
      });
    }
    go = true;
    REQUIRE(testing::WaitUntil([&] { return accepted.load() > 1000 * round; }));
    thread.Stop();
    for (auto& t : senders) t.join();
    CHECK(handler.handled_ == 3 * accepted.load());
    CHECK(thread.channel_msg_count() == static_cast<uint64_t>(accepted.load()));
    CHECK(handler.send_errors_ == 0);
    absl::Status late = thread.Send(TestMsg{0});
    CHECK(absl::IsFailedPrecondition(late));
    CHECK(late.message() == "thread m0/cpu0/s3 is stopped");
  }
}

// Asks its own thread to stop when it sees a negative value.
class SelfStopHandler : public MsgHandler<TestMsg> {
 public:
  void set_thread(Thread<TestMsg>* thread) { thread_ = thread; }
  void Handle(const TestMsg& msg) override {
    ++handled_;
    if (msg.value < 0) thread_->Stop();  // only requests: it cannot join itself
  }
  std::atomic<int> handled_{0};

 private:
  Thread<TestMsg>* thread_ = nullptr;
};

TEST_CASE("a handler can stop its own thread", "[thread]") {
  SelfStopHandler handler;
  CpuThread<TestMsg> thread(StreamKey{}, &handler);
  handler.set_thread(&thread);
  thread.Start();
  REQUIRE(thread.Send(TestMsg{1}).ok());
  REQUIRE(thread.Send(TestMsg{-1}).ok());
  REQUIRE(testing::WaitUntil([&] { return !thread.Send(TestMsg{5}).ok(); }));
  thread.Stop();  // joins
  // Messages sent before the stop request were all handled; none after it.
  CHECK(handler.handled_ == static_cast<int>(thread.channel_msg_count()));
  CHECK(handler.handled_ >= 2);
}

TEST_CASE("a thread that was never started stops cleanly", "[thread]") {
  CountdownHandler handler(nullptr);
  CpuThread<TestMsg> thread(StreamKey{}, &handler);
  handler.set_thread(&thread);
  REQUIRE(thread.Send(TestMsg{0}).ok());
  thread.Stop();
  CHECK(handler.handled_ == 0);
  CHECK(thread.device_kind() == DeviceKind::kCpu);
}

}  // namespace
}  // namespace actorflow::internal
