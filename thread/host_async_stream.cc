#include "thread/host_async_stream.h"

#include <pthread.h>

#include <utility>

namespace actorflow {

HostAsyncStream::HostAsyncStream() : worker_([this] { WorkerLoop(); }) {}

HostAsyncStream::~HostAsyncStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  work_ready_.notify_all();
  worker_.join();
}

void HostAsyncStream::Enqueue(std::function<absl::Status()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
    ++enqueued_;
  }
  work_ready_.notify_one();
}

absl::StatusOr<AsyncStream::EventToken> HostAsyncStream::RecordEvent() {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueued_;  // happens once that many items are done
}

absl::Status HostAsyncStream::WaitEvent(EventToken event) {
  std::unique_lock<std::mutex> lock(mu_);
  ++waiting_;
  progress_.wait(lock, [&] { return completed_ >= event; });
  --waiting_;
  // Like a sticky CUDA error: an event after a failure reports it.
  if (!error_.ok() && error_at_ <= event) return error_;
  return absl::OkStatus();
}

uint64_t HostAsyncStream::completed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return completed_;
}

int HostAsyncStream::waiting() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waiting_;
}

void HostAsyncStream::WorkerLoop() {
  pthread_setname_np(pthread_self(), "host-async");
  while (true) {
    std::function<absl::Status()> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      work_ready_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping, and nothing left
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    absl::Status status = work();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++completed_;
      if (!status.ok() && error_.ok()) {
        error_ = std::move(status);
        error_at_ = completed_;
      }
    }
    progress_.notify_all();
  }
}

}  // namespace actorflow
