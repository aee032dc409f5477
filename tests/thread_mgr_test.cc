#include "thread/thread_mgr.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

#include "actorflow/cuda_api.h"
#include "thread/blocking_counter.h"

namespace actorflow::internal {
namespace {

// A token travels around a ring of threads: thread i forwards it to thread
// (i + 1) % n until its hop budget is spent.
struct Token {
  int64_t hops_left = 0;
};

class RingHandler : public MsgHandler<Token> {
 public:
  RingHandler(BlockingCounter* done) : done_(done) {}
  void set_mgr(ThreadMgr<Token>* mgr) { mgr_ = mgr; }

  void Handle(const Token& token) override {
    handled_.fetch_add(1, std::memory_order_relaxed);
    if (token.hops_left == 0) {
      done_->Decrement();
      return;
    }
    int self = -1;
    for (int i = 0; i < mgr_->size(); ++i) {
      if (mgr_->thread(i)->InThisThread()) self = i;
    }
    Thread<Token>* next = mgr_->thread((self + 1) % mgr_->size());
    if (!next->Send(Token{token.hops_left - 1}).ok()) errors_.fetch_add(1);
  }

  std::atomic<int64_t> handled_{0};
  std::atomic<int64_t> errors_{0};

 private:
  BlockingCounter* done_;
  ThreadMgr<Token>* mgr_ = nullptr;
};

StreamKey Cpu(int stream) { return StreamKey{.stream_index = stream}; }

TEST_CASE("one thread per distinct stream, found by key", "[thread_mgr]") {
  BlockingCounter done(0);
  RingHandler handler(&done);
  std::vector<StreamKey> streams = {Cpu(0), Cpu(1), Cpu(0), Cpu(2), Cpu(1)};
  auto mgr = ThreadMgr<Token>::Create(streams, &handler);
  REQUIRE(mgr.ok());
  CHECK((*mgr)->size() == 3);
  for (int s = 0; s < 3; ++s) {
    auto thread = (*mgr)->Find(Cpu(s));
    REQUIRE(thread.ok());
    CHECK((*thread)->key() == Cpu(s));
    auto index = (*mgr)->IndexOf(Cpu(s));
    REQUIRE(index.ok());
    CHECK(*index == s);  // dense, in order of first appearance
    CHECK((*mgr)->thread(*index) == *thread);
  }
}

TEST_CASE("unknown and unsupported streams give clear errors", "[thread_mgr]") {
  BlockingCounter done(0);
  RingHandler handler(&done);
  std::vector<StreamKey> streams = {Cpu(0), Cpu(4)};
  auto mgr = ThreadMgr<Token>::Create(streams, &handler);
  REQUIRE(mgr.ok());
  auto missing = (*mgr)->Find(Cpu(9));
  CHECK(absl::IsNotFound(missing.status()));
  CHECK(missing.status().message() ==
        "no thread for stream m0/cpu0/s9; threads: m0/cpu0/s0, m0/cpu0/s4");
  CHECK(absl::IsNotFound((*mgr)->IndexOf(Cpu(9)).status()));

  std::vector<StreamKey> gpu = {
      Cpu(0), StreamKey{.device = DeviceKind::kGpu, .device_index = 1}};
  auto no_gpu = ThreadMgr<Token>::Create(gpu, &handler);
  if (cuda::DeviceAvailable(1).ok()) {
    CHECK(no_gpu.ok());  // a machine with two GPUs serves it
  } else {
    // The stream and the reason: no CUDA in the build, or no such device.
    INFO(no_gpu.status().ToString());
    CHECK(absl::IsUnavailable(no_gpu.status()));
    CHECK(no_gpu.status().message().rfind("stream m0/gpu1/s0: CUDA device 1: ",
                                          0) == 0);
  }

  std::vector<StreamKey> remote = {StreamKey{.machine_id = 2}};
  auto no_remote = ThreadMgr<Token>::Create(remote, &handler);
  CHECK(absl::IsUnimplemented(no_remote.status()));
  CHECK(no_remote.status().message().find("machine_id") !=
        absl::string_view::npos);

  std::vector<StreamKey> negative = {Cpu(-1)};
  CHECK(absl::IsInvalidArgument(
      ThreadMgr<Token>::Create(negative, &handler).status()));
}

TEST_CASE("many threads start, pass tokens around and stop, repeatedly",
          "[thread_mgr]") {
  constexpr int kThreads = 24;
  constexpr int kTokens = 6;
  constexpr int64_t kHops = 3 * kThreads;
  std::vector<StreamKey> streams;
  for (int s = 0; s < kThreads; ++s) streams.push_back(Cpu(s));
  for (int round = 0; round < 15; ++round) {
    BlockingCounter done(kTokens);
    RingHandler handler(&done);
    // Spinning receivers would make 24 threads fight over 2 cores; this
    // test is about start/stop, so they park at once.
    auto mgr = ThreadMgr<Token>::Create(streams, &handler,
                                        ChannelOptions{.spin_ns = 0});
    REQUIRE(mgr.ok());
    handler.set_mgr(mgr->get());
    for (int t = 0; t < kTokens; ++t) {
      REQUIRE((*mgr)->thread(t * 3)->Send(Token{kHops}).ok());
    }
    REQUIRE(done.WaitFor(absl::Seconds(60)));
    if (round % 2 == 0) (*mgr)->StopAll();  // explicit, then again in dtor
    mgr->reset();
    CHECK(handler.errors_ == 0);
    CHECK(handler.handled_ == kTokens * (kHops + 1));
  }
}

}  // namespace
}  // namespace actorflow::internal
