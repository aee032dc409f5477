#include "actor/feed_port.h"

#include "thread/spin_wait.h"

namespace actorflow::internal {

absl::StatusOr<Register*> FeedPort::Acquire() {
  // A register usually comes back within microseconds: spin before parking.
  SpinWhileCpuFree([this] { return news_.load(std::memory_order_acquire); },
                   spin_ns_, usable_cpus_);
  MutexLock lock(&mu_);
  while (free_.empty() && !closed_ && failure_.ok()) changed_.Wait(&mu_);
  if (!failure_.ok()) return failure_;
  if (closed_) return absl::FailedPreconditionError("the feed is closed");
  Register* reg = free_.back();
  free_.pop_back();
  Publish();
  return reg;
}

absl::StatusOr<Register*> FeedPort::TryAcquire() {
  MutexLock lock(&mu_);
  if (!failure_.ok()) return failure_;
  if (closed_) return absl::FailedPreconditionError("the feed is closed");
  if (free_.empty()) {
    return absl::UnavailableError("every register of the feed is in use");
  }
  Register* reg = free_.back();
  free_.pop_back();
  Publish();
  return reg;
}

void FeedPort::Unacquire(Register* reg) {
  MutexLock lock(&mu_);
  free_.push_back(reg);
  Publish();
  changed_.Signal();
}

void FeedPort::Submit(Register* reg) {
  MutexLock lock(&mu_);
  filled_.push_back(reg);
}

bool FeedPort::Close() {
  MutexLock lock(&mu_);
  bool was_open = !closed_;
  closed_ = true;
  Publish();
  changed_.SignalAll();
  return was_open;
}

void FeedPort::Release(Register* reg) {
  MutexLock lock(&mu_);
  free_.push_back(reg);
  Publish();
  changed_.Signal();
}

Register* FeedPort::PopFilled() {
  MutexLock lock(&mu_);
  if (filled_.empty()) return nullptr;
  Register* reg = filled_.front();
  filled_.pop_front();
  return reg;
}

bool FeedPort::Drained() {
  MutexLock lock(&mu_);
  return closed_ && filled_.empty();
}

void FeedPort::Reopen() {
  MutexLock lock(&mu_);
  closed_ = false;
  Publish();
}

void FeedPort::Fail(absl::Status status) {
  MutexLock lock(&mu_);
  if (failure_.ok()) failure_ = std::move(status);
  Publish();
  changed_.SignalAll();
}

}  // namespace actorflow::internal
