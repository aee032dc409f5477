#include "thread/host_async_stream.h"

#include <pthread.h>

#include <utility>

namespace actorflow::internal {

HostAsyncStream::HostAsyncStream() : worker_([this] { WorkerLoop(); }) {}

HostAsyncStream::~HostAsyncStream() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  work_ready_.SignalAll();
  worker_.join();
}

void HostAsyncStream::Enqueue(std::function<absl::Status()> work) {
  {
    MutexLock lock(&mu_);
    queue_.push_back(std::move(work));
    ++enqueued_;
  }
  work_ready_.Signal();
}

absl::StatusOr<AsyncStream::EventToken> HostAsyncStream::RecordEvent() {
  MutexLock lock(&mu_);
  return enqueued_;  // happens once that many items are done
}

absl::Status HostAsyncStream::WaitEvent(EventToken event) {
  MutexLock lock(&mu_);
  ++waiting_;
  while (completed_ < event) progress_.Wait(&mu_);
  --waiting_;
  // Like a sticky CUDA error: an event after a failure reports it.
  if (!error_.ok() && error_at_ <= event) return error_;
  return absl::OkStatus();
}

uint64_t HostAsyncStream::completed() const {
  MutexLock lock(&mu_);
  return completed_;
}

int HostAsyncStream::waiting() const {
  MutexLock lock(&mu_);
  return waiting_;
}

void HostAsyncStream::WorkerLoop() {
  pthread_setname_np(pthread_self(), "host-async");
  while (true) {
    std::function<absl::Status()> work;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) work_ready_.Wait(&mu_);
      if (queue_.empty()) return;  // stopping, and nothing left
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    absl::Status status = work();
    {
      MutexLock lock(&mu_);
      ++completed_;
      if (!status.ok() && error_.ok()) {
        error_ = std::move(status);
        error_at_ = completed_;
      }
    }
    progress_.SignalAll();
  }
}

}  // namespace actorflow::internal
