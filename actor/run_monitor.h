#ifndef ACTORFLOW_ACTOR_RUN_MONITOR_H_
#define ACTORFLOW_ACTOR_RUN_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <functional>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "thread/blocking_counter.h"

namespace actorflow::internal {

// What the actors of a session share with the runtime: how many are still
// running in the current run, whether the session is aborting, and the
// first failure. A failure is final: the session takes no more runs.
class RunMonitor {
 public:
  // `on_failure` (may be empty) runs once, with the first failure, on the
  // thread that reports it: the session wakes its callers there.
  explicit RunMonitor(
      int64_t num_actors,
      std::function<void(const absl::Status&)> on_failure = nullptr)
      : running_(num_actors), on_failure_(std::move(on_failure)) {}

  // The first failure wins; it also asks sources to stop producing, so the
  // run winds down through the normal end-of-data path.
  void ReportFailure(absl::Status status) {
    bool first = false;
    {
      MutexLock lock(&mu_);
      if (first_error_.ok()) {
        first_error_ = status;
        first = true;
      }
    }
    // Release: whoever sees aborting() then sees first_error_ (status()).
    aborting_.store(true, std::memory_order_release);
    if (first && on_failure_) on_failure_(status);
  }

  // Counts `num_actors` running again, for the next run.
  void StartRun(int64_t num_actors) { running_.Reset(num_actors); }

  bool aborting() const { return aborting_.load(std::memory_order_acquire); }
  // What KernelContext::cancelled reads.
  const std::atomic<bool>* aborting_flag() const { return &aborting_; }

  // Session::HoldSources: a plain source leaves its loop of acts at the
  // next piece (an act's consumers on its own thread can keep it in that
  // loop for the whole run, so a message alone would never reach it). The
  // source's own hold (Actor::HoldSupply) then keeps it stopped.
  void SetHolding(bool holding) {
    holding_.store(holding, std::memory_order_relaxed);
  }
  bool holding() const { return holding_.load(std::memory_order_relaxed); }

  void OnActorFinished() { running_.Decrement(); }
  BlockingCounter& running() { return running_; }

  absl::Status status() const {
    MutexLock lock(&mu_);
    return first_error_;
  }

 private:
  BlockingCounter running_;
  const std::function<void(const absl::Status&)> on_failure_;
  std::atomic<bool> aborting_{false};
  std::atomic<bool> holding_{false};
  mutable Mutex mu_;
  absl::Status first_error_ ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_RUN_MONITOR_H_
