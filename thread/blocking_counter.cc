#include "thread/blocking_counter.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace actorflow::internal {

BlockingCounter::BlockingCounter(int64_t initial) : count_(initial) {
  if (initial < 0) {
    std::fprintf(stderr, "BlockingCounter: negative initial count %lld\n",
                 static_cast<long long>(initial));
    std::abort();
  }
}

int64_t BlockingCounter::Decrement(int64_t by) {
  // Under the lock, which a waiter holds while it reads the count: one that
  // sees zero has taken the lock after this call let it go, so it may
  // destroy the counter at once (the SignalAll below must not run on a
  // destroyed one), and the wake-up cannot fall between its check and its
  // wait.
  MutexLock lock(&mu_);
  const int64_t after = count_.fetch_sub(by, std::memory_order_acq_rel) - by;
  if (after < 0) {
    std::fprintf(stderr, "BlockingCounter: decremented below zero (%lld)\n",
                 static_cast<long long>(after));
    std::abort();
  }
  if (after == 0) zero_.SignalAll();
  return after;
}

void BlockingCounter::Reset(int64_t count) {
  MutexLock lock(&mu_);
  count_.store(count, std::memory_order_release);
}

void BlockingCounter::Wait() {
  MutexLock lock(&mu_);
  while (value() != 0) zero_.Wait(&mu_);
}

bool BlockingCounter::WaitFor(absl::Duration timeout) {
  const auto deadline =
      std::chrono::steady_clock::now() + absl::ToChronoNanoseconds(timeout);
  MutexLock lock(&mu_);
  while (value() != 0) {
    if (zero_.WaitUntil(&mu_, deadline)) return value() == 0;
  }
  return true;
}

}  // namespace actorflow::internal
