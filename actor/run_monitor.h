#ifndef ACTORFLOW_ACTOR_RUN_MONITOR_H_
#define ACTORFLOW_ACTOR_RUN_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <mutex>

#include "absl/status/status.h"
#include "thread/blocking_counter.h"

namespace actorflow {

// What the actors of one run share with the runtime: how many are still
// running, whether the run is being aborted, and the first failure.
class RunMonitor {
 public:
  explicit RunMonitor(int64_t num_actors) : running_(num_actors) {}

  // The first failure wins; it also asks sources to stop producing, so the
  // run winds down through the normal end-of-data path.
  void ReportFailure(absl::Status status) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (first_error_.ok()) first_error_ = std::move(status);
    }
    aborting_.store(true, std::memory_order_relaxed);
  }

  bool aborting() const { return aborting_.load(std::memory_order_relaxed); }

  void OnActorFinished() { running_.Decrement(); }
  BlockingCounter& running() { return running_; }

  absl::Status status() const {
    std::lock_guard<std::mutex> lock(mu_);
    return first_error_;
  }

 private:
  BlockingCounter running_;
  std::atomic<bool> aborting_{false};
  mutable std::mutex mu_;
  absl::Status first_error_;  // guarded by mu_
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTOR_RUN_MONITOR_H_
