#ifndef ACTORFLOW_THREAD_SPIN_MUTEX_H_
#define ACTORFLOW_THREAD_SPIN_MUTEX_H_

#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "actorflow/usable_cpus.h"
#include "thread/cpu_relax.h"
#include "thread/spin_wait.h"

namespace actorflow::internal {

// A lock for critical sections of a few dozen instructions (the engine's
// variable queues), where std::mutex under contention parks in the kernel
// and a futex round trip costs more than the section a hundred times over.
// Waiters spin on a plain load for a few microseconds whatever else runs
// (critical sections here are tens of nanoseconds: a holder on its CPU
// releases the lock well within that), then on while a CPU is free for
// them (spin_wait.h). Past that the holder is off its CPU (preempted, on a
// machine with more threads than CPUs) and needs one to finish: waiters then
// sleep, from 10 us doubling to 1 ms, instead of taking CPU time from it; so
// unlocking stays one plain store, with no waiter to wake. Satisfies Lockable;
// SpinMutexLock holds it for a scope where the thread-safety analysis can
// see it.
class ABSL_LOCKABLE SpinMutex {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    if (!locked_.exchange(true, std::memory_order_acquire)) return;
    LockSlow();
  }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    return !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() ABSL_UNLOCK_FUNCTION() {
    locked_.store(false, std::memory_order_release);
  }

 private:
  static constexpr int64_t kSpinNs = 20'000;
  static constexpr int kFirstSpins = 128;  // some 4 us of pauses

  __attribute__((noinline)) void LockSlow() {
    for (int i = 0; i < kFirstSpins; ++i) {
      CpuRelax();
      if (!locked_.load(std::memory_order_relaxed) &&
          !locked_.exchange(true, std::memory_order_acquire)) {
        return;
      }
    }
    int64_t sleep_ns = 10'000;
    while (true) {
      SpinWhileCpuFree(
          [this] { return !locked_.load(std::memory_order_relaxed); }, kSpinNs,
          ProcessUsableCpus().count);
      if (!locked_.exchange(true, std::memory_order_acquire)) return;
      if (!locked_.load(std::memory_order_relaxed)) continue;
      cpu_gate::BeforePark();
      timespec pause{0, static_cast<long>(sleep_ns)};
      nanosleep(&pause, nullptr);
      cpu_gate::AfterWake();
      sleep_ns = std::min<int64_t>(2 * sleep_ns, 1'000'000);
    }
  }

  std::atomic<bool> locked_{false};
};

class ABSL_SCOPED_LOCKABLE SpinMutexLock {
 public:
  explicit SpinMutexLock(SpinMutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu)
      : mu_(mu) {
    mu_->lock();
  }
  ~SpinMutexLock() ABSL_UNLOCK_FUNCTION() { mu_->unlock(); }
  SpinMutexLock(const SpinMutexLock&) = delete;
  SpinMutexLock& operator=(const SpinMutexLock&) = delete;

 private:
  SpinMutex* const mu_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_SPIN_MUTEX_H_
