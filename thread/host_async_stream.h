#ifndef ACTORFLOW_THREAD_HOST_ASYNC_STREAM_H_
#define ACTORFLOW_THREAD_HOST_ASYNC_STREAM_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "thread/async_stream.h"

namespace actorflow::internal {

// A stream on the host, standing in for a device stream where there is no
// GPU: work queued with Enqueue runs in order on the stream's own worker
// thread, and events behave like CUDA events. It drives the same deferred
// callback path as a CUDA stream, so that path is tested on every machine.
class HostAsyncStream final : public AsyncStream {
 public:
  HostAsyncStream();
  // Finishes the queued work, then joins the worker.
  ~HostAsyncStream() override;
  HostAsyncStream(const HostAsyncStream&) = delete;
  HostAsyncStream& operator=(const HostAsyncStream&) = delete;

  // Queues `work`; a non-OK return marks the stream failed: every event
  // recorded after it reports that error. Any thread.
  void Enqueue(std::function<absl::Status()> work);
  void Submit(std::function<absl::Status()> work) override {
    Enqueue(std::move(work));
  }

  absl::StatusOr<EventToken> RecordEvent() override;
  absl::Status WaitEvent(EventToken event) override;
  void ReleaseEvent(EventToken) override {}
  const char* name() const override { return "host-async"; }

  // Work items finished so far.
  uint64_t completed() const;
  // Threads blocked in WaitEvent now (for tests: "the poller is waiting").
  int waiting() const;

 private:
  void WorkerLoop();

  mutable Mutex mu_;
  CondVar work_ready_;
  CondVar progress_;
  std::deque<std::function<absl::Status()>> queue_ ABSL_GUARDED_BY(mu_);
  uint64_t enqueued_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  // The item that failed (1-based).
  uint64_t error_at_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  int waiting_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread worker_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_HOST_ASYNC_STREAM_H_
