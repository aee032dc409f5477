#ifndef ACTORFLOW_THREAD_ASYNC_THREAD_H_
#define ACTORFLOW_THREAD_ASYNC_THREAD_H_

#include <memory>
#include <string>
#include <utility>

#include "thread/async_stream.h"
#include "thread/callback_poller.h"
#include "thread/host_async_stream.h"
#include "thread/thread.h"

namespace actorflow::internal {

// An actor thread whose kernels run on an asynchronous stream: the loop
// thread submits work to the stream, and the thread's poller runs the
// callbacks (the actors' deferred sends) once the work is done. The poller
// is joined in JoinHelpers, after it has run every callback already added;
// the stream is destroyed after the poller. The public constructor makes a
// host asynchronous stream; GpuThread passes a CUDA stream.
template <typename Msg>
class AsyncThread : public Thread<Msg> {
 public:
  AsyncThread(StreamKey key, MsgHandler<Msg>* handler,
              ChannelOptions options = {})
      : AsyncThread(key, handler, options,
                    std::make_unique<HostAsyncStream>()) {}
  ~AsyncThread() override {
    this->Stop();
    JoinHelpers();
  }

  void JoinHelpers() override { poller_.Stop(); }

  DeviceKind device_kind() const override { return this->key().device; }

  AsyncStream* stream() { return stream_.get(); }
  CallbackPoller* poller() { return &poller_; }

 protected:
  AsyncThread(StreamKey key, MsgHandler<Msg>* handler, ChannelOptions options,
              std::unique_ptr<AsyncStream> stream)
      : Thread<Msg>(key, handler, options),
        stream_(std::move(stream)),
        poller_(key.ToString() + "p") {}

 private:
  // Declared first: destroyed last, after the poller has stopped waiting on
  // its events.
  std::unique_ptr<AsyncStream> stream_;
  CallbackPoller poller_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_ASYNC_THREAD_H_
