#ifndef ACTORFLOW_THREAD_ASYNC_THREAD_H_
#define ACTORFLOW_THREAD_ASYNC_THREAD_H_

#include <memory>
#include <string>
#include <utility>

#include "thread/callback_poller.h"
#include "thread/host_async_stream.h"
#include "thread/thread.h"

namespace actorflow {

// An actor thread whose kernels run on an asynchronous stream: the loop
// thread queues work on the stream, and the thread's poller runs the
// callbacks (the actors' deferred sends) once the work is done. Both extra
// threads are joined on Stop, the poller after it has run every callback
// already added. This kind owns a HostAsyncStream; a CUDA stream plugs in
// the same way.
template <typename Msg>
class AsyncThread final : public Thread<Msg> {
 public:
  AsyncThread(StreamKey key, MsgHandler<Msg>* handler,
              ChannelOptions options = {})
      : Thread<Msg>(key, handler, options), poller_(key.ToString() + "p") {}
  ~AsyncThread() override {
    this->Stop();
    JoinHelpers();
  }

  void JoinHelpers() override { poller_.Stop(); }

  DeviceKind device_kind() const override { return this->key().device; }

  HostAsyncStream* stream() { return &stream_; }
  CallbackPoller* poller() { return &poller_; }

 private:
  // Declared first: destroyed last, after the poller has stopped waiting on
  // its events.
  HostAsyncStream stream_;
  CallbackPoller poller_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_ASYNC_THREAD_H_
