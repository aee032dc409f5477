#ifndef ACTORFLOW_THREAD_SPIN_MUTEX_H_
#define ACTORFLOW_THREAD_SPIN_MUTEX_H_

#include <sched.h>

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "thread/cpu_relax.h"

namespace actorflow {

// A lock for critical sections of a few dozen instructions (the engine's
// variable queues), where std::mutex under contention parks in the kernel
// and a futex round trip costs more than the section a hundred times over.
// Waiters spin on a plain load, and give up the core now and then so that a
// preempted holder on an oversubscribed machine can finish. Satisfies
// Lockable; SpinMutexLock holds it for a scope where the thread-safety
// analysis can see it.
class ABSL_LOCKABLE SpinMutex {
 public:
  void lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    while (locked_.exchange(true, std::memory_order_acquire)) {
      int spins = 0;
      while (locked_.load(std::memory_order_relaxed)) {
        if (++spins % 64 == 0) {
          sched_yield();
        } else {
          CpuRelax();
        }
      }
    }
  }
  bool try_lock() ABSL_EXCLUSIVE_TRYLOCK_FUNCTION(true) {
    return !locked_.exchange(true, std::memory_order_acquire);
  }
  void unlock() ABSL_UNLOCK_FUNCTION() {
    locked_.store(false, std::memory_order_release);
  }

 private:
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

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_SPIN_MUTEX_H_
