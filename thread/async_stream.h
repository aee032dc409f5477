#ifndef ACTORFLOW_THREAD_ASYNC_STREAM_H_
#define ACTORFLOW_THREAD_ASYNC_STREAM_H_

#include <cstdint>
#include <functional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace actorflow::internal {

// Work that runs in order somewhere else (a CUDA stream, or a host worker
// thread), whose progress is learned through events: an event recorded now
// happens once everything queued before it is done. A CallbackPoller waits
// on the events.
class AsyncStream {
 public:
  // Names one recorded event until it is released.
  using EventToken = uint64_t;

  virtual ~AsyncStream() = default;

  // Runs one act's work in stream order. A host stream queues `work` for
  // its worker thread; a device stream calls it right here, on the actor's
  // thread, where it queues device work on native_handle(). Either way an
  // event recorded afterwards happens once that work is done.
  virtual void Submit(std::function<absl::Status()> work) = 0;

  // Records an event after everything queued so far. Any thread.
  virtual absl::StatusOr<EventToken> RecordEvent() = 0;
  // Blocks until the event has happened; an error if the work before it
  // failed or the device did. The poller's thread only.
  virtual absl::Status WaitEvent(EventToken event) = 0;
  // Gives the event back (to a pool) once waited for.
  virtual void ReleaseEvent(EventToken event) = 0;

  // A short name for messages: "host-async", "cuda:0".
  virtual const char* name() const = 0;
  // The cudaStream_t for kernels to launch on; null for host streams.
  virtual void* native_handle() const { return nullptr; }
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_ASYNC_STREAM_H_
