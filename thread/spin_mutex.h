#ifndef ACTORFLOW_THREAD_SPIN_MUTEX_H_
#define ACTORFLOW_THREAD_SPIN_MUTEX_H_

#include <sched.h>

#include <atomic>

#include "thread/cpu_relax.h"

namespace actorflow {

// A lock for critical sections of a few dozen instructions (the engine's
// variable queues), where std::mutex under contention parks in the kernel
// and a futex round trip costs more than the section a hundred times over.
// Waiters spin on a plain load, and give up the core now and then so that a
// preempted holder on an oversubscribed machine can finish. Satisfies
// Lockable, for std::lock_guard.
class SpinMutex {
 public:
  void lock() {
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
  bool try_lock() { return !locked_.exchange(true, std::memory_order_acquire); }
  void unlock() { locked_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> locked_{false};
};

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_SPIN_MUTEX_H_
