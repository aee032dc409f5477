#include "thread/blocking_counter.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace actorflow {

BlockingCounter::BlockingCounter(int64_t initial) : count_(initial) {
  if (initial < 0) {
    std::fprintf(stderr, "BlockingCounter: negative initial count %lld\n",
                 static_cast<long long>(initial));
    std::abort();
  }
}

int64_t BlockingCounter::Decrement(int64_t by) {
  int64_t after = count_.fetch_sub(by, std::memory_order_acq_rel) - by;
  if (after < 0) {
    std::fprintf(stderr, "BlockingCounter: decremented below zero (%lld)\n",
                 static_cast<long long>(after));
    std::abort();
  }
  if (after == 0) {
    // Taking the lock orders this notify after any waiter's check of the
    // count, so the wake-up cannot fall between its check and its wait.
    std::lock_guard<std::mutex> lock(mu_);
    zero_.notify_all();
  }
  return after;
}

void BlockingCounter::Reset(int64_t count) {
  std::lock_guard<std::mutex> lock(mu_);
  count_.store(count, std::memory_order_release);
}

void BlockingCounter::Wait() {
  std::unique_lock<std::mutex> lock(mu_);
  zero_.wait(lock, [this] { return value() == 0; });
}

bool BlockingCounter::WaitFor(absl::Duration timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  return zero_.wait_for(lock, absl::ToChronoNanoseconds(timeout),
                        [this] { return value() == 0; });
}

}  // namespace actorflow
