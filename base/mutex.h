#ifndef ACTORFLOW_BASE_MUTEX_H_
#define ACTORFLOW_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"

namespace actorflow::internal {

// A std::mutex that clang's thread-safety analysis (-Wthread-safety, see
// --config=thread_safety) understands: state it guards is declared
// ABSL_GUARDED_BY(mu_), and functions that need it held say
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_). libstdc++'s std::mutex carries no such
// annotations, so the analysis would check nothing through it.
//
// Why not absl::Mutex: Debian's Abseil is built without ThreadSanitizer, so
// its own futex-based locking is invisible to --config=tsan, which would then
// report every access it guards as a race. A std::mutex is a pthread mutex,
// which TSan intercepts.
class ABSL_LOCKABLE Mutex {
 public:
  Mutex() = default;
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Tells the analysis the caller holds it (where the analysis cannot see
  // that, e.g. in a callback run under the lock). Checks nothing at run time.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds a Mutex for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) {
    mu_->Lock();
  }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable for Mutex. Waits may wake spuriously: callers loop on
// their condition, which the analysis then checks is read under the lock.
class CondVar {
 public:
  // Releases `mu` while waiting; holds it again on return.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // As Wait, for at most `timeout`. True if the time ran out.
  bool WaitWithTimeout(Mutex* mu, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    bool timed_out = cv_.wait_for(lock, absl::ToChronoNanoseconds(timeout)) ==
                     std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  // As Wait, until `deadline` on the steady clock. True if it passed.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    bool timed_out = cv_.wait_until(lock, deadline) == std::cv_status::timeout;
    lock.release();
    return timed_out;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_BASE_MUTEX_H_
