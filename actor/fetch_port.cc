#include "actor/fetch_port.h"

#include "thread/spin_wait.h"

namespace actorflow::internal {

absl::StatusOr<Register*> FetchPort::Next() {
  // A piece usually comes within microseconds: spin before parking.
  SpinWhileCpuFree([this] { return news_.load(std::memory_order_acquire); },
                   spin_ns_, usable_cpus_);
  MutexLock lock(&mu_);
  while (ready_.empty() && !ended_ && failure_.ok()) changed_.Wait(&mu_);
  if (!failure_.ok()) return failure_;
  if (ready_.empty()) {
    return absl::OutOfRangeError("end of data: every piece has been fetched");
  }
  Register* reg = ready_.front();
  ready_.pop_front();
  Publish();
  return reg;
}

bool FetchPort::Push(Register* reg) {
  MutexLock lock(&mu_);
  if (!failure_.ok()) return false;
  ready_.push_back(reg);
  Publish();
  changed_.Signal();
  return true;
}

void FetchPort::End() {
  MutexLock lock(&mu_);
  ended_ = true;
  Publish();
  changed_.SignalAll();
}

void FetchPort::Reopen() {
  MutexLock lock(&mu_);
  ended_ = false;
  Publish();
}

std::vector<Register*> FetchPort::Fail(absl::Status status) {
  MutexLock lock(&mu_);
  if (failure_.ok()) failure_ = std::move(status);
  std::vector<Register*> left(ready_.begin(), ready_.end());
  ready_.clear();
  Publish();
  changed_.SignalAll();
  return left;
}

std::vector<Register*> FetchPort::TakeAll() {
  MutexLock lock(&mu_);
  std::vector<Register*> left(ready_.begin(), ready_.end());
  ready_.clear();
  Publish();
  return left;
}

}  // namespace actorflow::internal
