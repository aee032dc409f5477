#ifndef ACTORFLOW_ACTOR_FETCH_PORT_H_
#define ACTORFLOW_ACTOR_FETCH_PORT_H_

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

// Where a `fetch` task's input meets the caller. The fetch actor hands each
// register it receives here, in piece order, instead of reading it; the
// caller takes them one by one and, when done, the session returns each to
// its producer. So the producer's register_num bounds how far the plan runs
// ahead of the caller, and nothing queues without bound.
class FetchPort {
 public:
  // --- caller ---
  // The next piece's register. Blocks until there is one; OutOfRange once
  // this run's pieces are all taken; the failure once the run has failed.
  absl::StatusOr<Register*> Next();

  // --- fetch actor ---
  // False once the run has failed: the actor then returns it itself.
  bool Push(Register* reg);
  // No more pieces this run.
  void End();

  // --- session ---
  void Reopen();
  // Wakes every blocked caller with `status`; later calls return it. Returns
  // the registers nobody took, for the session to hand back.
  std::vector<Register*> Fail(absl::Status status);
  // Registers nobody took (a run ended with pieces left unfetched).
  std::vector<Register*> TakeAll();

  // How a blocked caller waits: it spins up to `spin_ns` while a CPU is
  // free for it among `usable_cpus` (spin_wait.h), then parks (its
  // session's ChannelOptions; spin_ns 0 parks at once).
  void set_wait(int64_t spin_ns, int usable_cpus) {
    spin_ns_ = spin_ns;
    usable_cpus_ = usable_cpus;
  }

 private:
  // Whether Next has something to return; written under mu_, read by a
  // spinning caller without it.
  void Publish() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    news_.store(!ready_.empty() || ended_ || !failure_.ok(),
                std::memory_order_release);
  }

  Mutex mu_;
  CondVar changed_;
  std::deque<Register*> ready_ ABSL_GUARDED_BY(mu_);
  bool ended_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> news_{false};
  int64_t spin_ns_ = kDefaultSpinNs;
  int usable_cpus_ = 1;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_FETCH_PORT_H_
