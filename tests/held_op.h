#ifndef ACTORFLOW_TESTS_HELD_OP_H_
#define ACTORFLOW_TESTS_HELD_OP_H_

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <optional>

#include "engine/engine.h"
#include "tests/test_util.h"

namespace actorflow::internal::testing {

// An asynchronous engine operation that the test completes when it
// chooses: until then it holds its variables.
class HeldOp {
 public:
  engine::AsyncFn Fn() {
    return [this](engine::RunContext, engine::CallbackOnComplete done) {
      std::lock_guard<std::mutex> lock(mu_);
      callback_.emplace(std::move(done));
      started_.store(true);
    };
  }
  bool started() const { return started_.load(); }
  // Waits until it started, then completes it with `status`.
  void Release(absl::Status status = absl::OkStatus()) {
    REQUIRE(WaitUntil([this] { return started(); }));
    std::lock_guard<std::mutex> lock(mu_);
    (*callback_)(std::move(status));
    callback_.reset();
  }

 private:
  std::mutex mu_;
  std::optional<engine::CallbackOnComplete> callback_;
  std::atomic<bool> started_{false};
};

}  // namespace actorflow::internal::testing

#endif  // ACTORFLOW_TESTS_HELD_OP_H_
