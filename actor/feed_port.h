#ifndef ACTORFLOW_ACTOR_FEED_PORT_H_
#define ACTORFLOW_ACTOR_FEED_PORT_H_

#include <atomic>
#include <deque>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actor/register.h"
#include "base/mutex.h"
#include "thread/spin_wait.h"

namespace actorflow::internal {

// Where a `feed` task's registers meet the caller. The feed actor hands
// every free register here; the caller takes one (blocking while all are in
// use downstream: the register_num bound), fills it, and submits it; the
// actor publishes submitted registers in order as its pieces. Closing ends
// the feed once everything submitted is published.
//
// Invariant: a register is in exactly one place: the actor's hands, `free_`,
// the caller's hands (between Acquire and Submit), `filled_`, or downstream.
class FeedPort {
 public:
  // --- caller ---
  // A free register to fill. Blocks while there is none; an error once the
  // feed is closed or the run has failed.
  absl::StatusOr<Register*> Acquire();
  // The same without blocking: Unavailable while every register is in use.
  absl::StatusOr<Register*> TryAcquire();
  // Gives back a register from Acquire without feeding it.
  void Unacquire(Register* reg);
  void Submit(Register* reg);
  // No more pieces this run; false if it was closed already.
  bool Close();

  // --- feed actor ---
  void Release(Register* reg);
  // The oldest submitted register, or null.
  Register* PopFilled();
  // Closed, and everything submitted has been popped.
  bool Drained();

  // --- session ---
  // Opens the feed for a new run.
  void Reopen();
  // Wakes every blocked caller with `status`; later calls return it.
  void Fail(absl::Status status);

  // How a blocked caller waits: it spins up to `spin_ns` while a CPU is
  // free for it among `usable_cpus` (spin_wait.h), then parks (its
  // session's ChannelOptions; spin_ns 0 parks at once).
  void set_wait(int64_t spin_ns, int usable_cpus) {
    spin_ns_ = spin_ns;
    usable_cpus_ = usable_cpus;
  }

 private:
  // Whether Acquire would return at once; written under mu_, read by a
  // spinning caller without it.
  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    news_.store(!free_.empty() || closed_ || !failure_.ok(),
                std::memory_order_release);
  }

  Mutex mu_;
  CondVar changed_;
  std::atomic<bool> news_{false};
  int64_t spin_ns_ = kDefaultSpinNs;
  int usable_cpus_ = 1;
  std::vector<Register*> free_ ABSL_GUARDED_BY(mu_);
  std::deque<Register*> filled_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_FEED_PORT_H_
