#ifndef ACTORFLOW_THREAD_BLOCKING_COUNTER_H_
#define ACTORFLOW_THREAD_BLOCKING_COUNTER_H_

#include <atomic>
#include <cstdint>

#include "absl/time/time.h"
#include "base/mutex.h"

namespace actorflow::internal {

// Counts down to zero; waiters block until it gets there. The runtime uses
// one for actors still constructing and one for actors still running.
class BlockingCounter {
 public:
  explicit BlockingCounter(int64_t initial);
  BlockingCounter(const BlockingCounter&) = delete;
  BlockingCounter& operator=(const BlockingCounter&) = delete;

  // Returns the count after decrementing. Going below zero is a bug in the
  // caller's accounting: it aborts with a message rather than letting a
  // waiter miss its wake-up or return early.
  int64_t Decrement(int64_t by = 1);

  // Starts counting again from `count`. Only while nobody waits or
  // decrements (the runtime resets its counters between runs).
  void Reset(int64_t count);

  void Wait();
  // True if the count reached zero within `timeout`.
  bool WaitFor(absl::Duration timeout);

  int64_t value() const { return count_.load(std::memory_order_acquire); }

 private:
  std::atomic<int64_t> count_;
  // Held by every decrement and by a waiter's check of the count, so a
  // waiter that sees zero returns only after the decrement that made it is
  // done with the counter (it may then destroy it). The count itself is
  // atomic: value() reads it without the lock.
  Mutex mu_;
  CondVar zero_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_BLOCKING_COUNTER_H_
