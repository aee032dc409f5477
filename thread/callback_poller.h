#ifndef ACTORFLOW_THREAD_CALLBACK_POLLER_H_
#define ACTORFLOW_THREAD_CALLBACK_POLLER_H_

#include <functional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "thread/async_stream.h"
#include "thread/channel.h"

namespace actorflow::internal {

// The thread that learns when stream work is done: AddCallback records an
// event on a stream and hands {event, callback} over; the poller waits for
// each event in turn and then runs its callback, on the poller's thread.
// Callbacks run in the order they were added, so those of one stream run in
// stream order, and none runs before the work queued ahead of its event has
// finished. Stop runs every callback already added (waiting for its event)
// before it joins, so nothing is lost at shutdown.
class CallbackPoller {
 public:
  // The status is the event's: an error if the work before it failed.
  using Callback = std::function<void(absl::Status)>;

  // `name` names the thread (15 characters are kept).
  explicit CallbackPoller(std::string name);
  ~CallbackPoller() { Stop(); }
  CallbackPoller(const CallbackPoller&) = delete;
  CallbackPoller& operator=(const CallbackPoller&) = delete;

  // Fails, without running `fn`, if the event cannot be recorded or the
  // poller is stopping. Any thread.
  absl::Status AddCallback(AsyncStream* stream, Callback fn);

  // Runs what was added, then joins. Idempotent; not from a callback.
  void Stop();

  bool InPollerThread() const {
    return thread_.get_id() == std::this_thread::get_id();
  }

 private:
  struct Item {
    AsyncStream* stream = nullptr;
    AsyncStream::EventToken event = 0;
    Callback fn;
  };

  void Loop();

  const std::string name_;
  Channel<Item> items_;
  std::thread thread_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_CALLBACK_POLLER_H_
