#ifndef ACTORFLOW_THREAD_HOST_ASYNC_STREAM_H_
#define ACTORFLOW_THREAD_HOST_ASYNC_STREAM_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>

#include "thread/async_stream.h"

namespace actorflow {

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

  mutable std::mutex mu_;
  std::condition_variable work_ready_;
  std::condition_variable progress_;
  std::deque<std::function<absl::Status()>> queue_;  // guarded by mu_
  uint64_t enqueued_ = 0;                            // guarded by mu_
  uint64_t completed_ = 0;                           // guarded by mu_
  absl::Status error_;                               // guarded by mu_
  uint64_t error_at_ = 0;  // the item that failed (1-based); guarded by mu_
  bool stopping_ = false;  // guarded by mu_
  int waiting_ = 0;        // guarded by mu_
  std::thread worker_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_HOST_ASYNC_STREAM_H_
