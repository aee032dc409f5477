#include "pipeline/remote_prefetch.h"

#include <utility>

namespace actorflow::internal::pipeline {

RemotePrefetcher::RemotePrefetcher(HttpRetry retry) : http_(retry) {
  http_.set_cancel(&cancel_);
  thread_ = std::thread([this] { Loop(); });
}

RemotePrefetcher::~RemotePrefetcher() {
  cancel_.store(true, std::memory_order_relaxed);
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    queued_cv_.SignalAll();
  }
  thread_.join();
}

std::shared_ptr<RemotePrefetcher::Run> RemotePrefetcher::Fetch(
    const std::string& url, int64_t offset, int64_t length) {
  constexpr size_t kSpares = 8;
  std::shared_ptr<Spares> spares = spares_;
  std::shared_ptr<Run> run(new Run, [spares](Run* done) {
    if (done->bytes.capacity() == kRunBytes) {
      done->bytes.clear();
      MutexLock lock(&spares->mu);
      if (spares->buffers.size() < kSpares) {
        spares->buffers.push_back(std::move(done->bytes));
      }
    }
    delete done;
  });
  if (length <= kRunBytes) {
    MutexLock lock(&spares->mu);
    if (!spares->buffers.empty()) {
      run->bytes = std::move(spares->buffers.back());
      spares->buffers.pop_back();
    }
  }
  if (length <= kRunBytes && run->bytes.capacity() != kRunBytes) {
    run->bytes = std::string();
    run->bytes.reserve(kRunBytes);
  }
  run->url = url;
  run->offset = offset;
  run->length = length;
  MutexLock lock(&mu_);
  queue_.push_back(run);
  queued_cv_.Signal();
  return run;
}

absl::Status RemotePrefetcher::Wait(Run* run) {
  MutexLock lock(&run->mu);
  while (!run->done) run->done_cv.Wait(&run->mu);
  return run->status;
}

void RemotePrefetcher::Loop() {
  for (;;) {
    std::shared_ptr<Run> run;
    {
      MutexLock lock(&mu_);
      while (queue_.empty() && !stopping_) queued_cv_.Wait(&mu_);
      if (stopping_) break;
      run = std::move(queue_.front());
      queue_.pop_front();
    }
    absl::Status status =
        http_.Read(run->url, run->offset, run->length, &run->bytes);
    MutexLock lock(&run->mu);
    run->status = std::move(status);
    run->done = true;
    run->done_cv.SignalAll();
  }
  // Whoever still holds a queued run finds it failed, not pending forever.
  MutexLock lock(&mu_);
  for (std::shared_ptr<Run>& run : queue_) {
    MutexLock done(&run->mu);
    run->status = absl::CancelledError("the reader is closing");
    run->done = true;
    run->done_cv.SignalAll();
  }
  queue_.clear();
}

}  // namespace actorflow::internal::pipeline
