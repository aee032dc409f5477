#include "actor/feed_port.h"

#include "thread/spin_wait.h"

namespace actorflow {

absl::StatusOr<Regst*> FeedPort::Acquire() {
  // A register usually comes back within microseconds: spin before parking.
  SpinUntil([this] { return news_.load(std::memory_order_acquire); }, spin_ns_);
  std::unique_lock<std::mutex> lock(mu_);
  changed_.wait(lock,
                [&] { return !free_.empty() || closed_ || !failure_.ok(); });
  if (!failure_.ok()) return failure_;
  if (closed_) return absl::FailedPreconditionError("the feed is closed");
  Regst* regst = free_.back();
  free_.pop_back();
  Publish();
  return regst;
}

absl::StatusOr<Regst*> FeedPort::TryAcquire() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!failure_.ok()) return failure_;
  if (closed_) return absl::FailedPreconditionError("the feed is closed");
  if (free_.empty()) {
    return absl::UnavailableError("every register of the feed is in use");
  }
  Regst* regst = free_.back();
  free_.pop_back();
  Publish();
  return regst;
}

void FeedPort::Unacquire(Regst* regst) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(regst);
  Publish();
  changed_.notify_one();
}

void FeedPort::Submit(Regst* regst) {
  std::lock_guard<std::mutex> lock(mu_);
  filled_.push_back(regst);
}

bool FeedPort::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  bool was_open = !closed_;
  closed_ = true;
  Publish();
  changed_.notify_all();
  return was_open;
}

void FeedPort::Release(Regst* regst) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(regst);
  Publish();
  changed_.notify_one();
}

Regst* FeedPort::PopFilled() {
  std::lock_guard<std::mutex> lock(mu_);
  if (filled_.empty()) return nullptr;
  Regst* regst = filled_.front();
  filled_.pop_front();
  return regst;
}

bool FeedPort::Drained() {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_ && filled_.empty();
}

void FeedPort::Reopen() {
  std::lock_guard<std::mutex> lock(mu_);
  closed_ = false;
  Publish();
}

void FeedPort::Fail(absl::Status status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (failure_.ok()) failure_ = std::move(status);
  Publish();
  changed_.notify_all();
}

}  // namespace actorflow
