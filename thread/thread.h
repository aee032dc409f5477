#ifndef ACTORFLOW_THREAD_THREAD_H_
#define ACTORFLOW_THREAD_THREAD_H_

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "actorflow/stream_key.h"
#include "thread/channel.h"
#include "thread/ring_queue.h"
#include "thread/spin_wait.h"

namespace actorflow::internal {

// Receives every message a Thread dispatches, on that thread.
template <typename Msg>
class MsgHandler {
 public:
  virtual ~MsgHandler() = default;
  virtual void Handle(const Msg& msg) = 0;
};

namespace thread_internal {
// The Thread whose loop runs on the calling OS thread, if any.
inline thread_local const void* current_thread = nullptr;
// The running Thread's channel's parker (see ChannelParker).
inline thread_local std::atomic<ChannelParker*>* current_parker_slot = nullptr;
}  // namespace thread_internal

// One polling thread. Messages sent from the thread itself go to a plain
// local queue (no lock, no atomic); everyone else's go through a Channel.
// The loop drains the local queue, then takes everything waiting in the
// channel in one go, and hands each message to the handler.
//
// Stopping is a command on the same path: RequestStop() closes the channel,
// so the loop still handles everything sent before it (and whatever those
// messages send locally), then exits. Later sends from other threads fail.
template <typename Msg>
class Thread {
 public:
  // `handler` must outlive the thread's loop.
  Thread(StreamKey key, MsgHandler<Msg>* handler, ChannelOptions options = {})
      : channel_(options),
        local_(std::max<size_t>(64, options.reserve)),
        key_(key),
        handler_(handler) {
    batch_.reserve(options.reserve);
  }

  virtual ~Thread() { Stop(); }
  Thread(const Thread&) = delete;
  Thread& operator=(const Thread&) = delete;

  // Launches the loop. Call once.
  virtual void Start() {
    os_thread_ = std::thread([this] { Loop(); });
  }

  absl::Status Send(const Msg& msg) {
    return TrySend(msg) ? absl::OkStatus() : StoppedError();
  }

  // Send without building a Status: false when the thread was stopped. The
  // actor message path uses this.
  bool TrySend(const Msg& msg) {
    if (InThisThread()) {
      local_.Push(msg);
      return true;
    }
    return channel_.Send(msg) == ChannelStatus::kOk;
  }
  // TrySend through the channel even from the loop's own thread: for a
  // sender that may run inside the loop's wait (a callback in its parker),
  // where the local queue is not looked at until the wait ends. Any thread.
  bool SendToChannel(const Msg& msg) {
    return channel_.Send(msg) == ChannelStatus::kOk;
  }

  // Any thread, the loop's own included.
  void RequestStop() { channel_.Close(); }

  // RequestStop, then wait for the loop to exit. From the loop itself it only
  // requests; the owner joins later.
  virtual void Stop() {
    RequestStop();
    if (!InThisThread() && os_thread_.joinable()) os_thread_.join();
  }

  // Gives up on a loop stuck in a call that does not return (a kernel that
  // never ends): the loop is detached instead of joined, and handles no
  // message after that call. The owner must then never destroy this
  // object, nor anything the stuck call may still touch.
  virtual void Abandon() {
    abandoned_.store(true, std::memory_order_relaxed);
    RequestStop();
    if (os_thread_.joinable()) os_thread_.detach();
  }
  bool abandoned() const { return abandoned_.load(std::memory_order_relaxed); }

  // Stops and joins the threads this one owns besides its loop (an async
  // stream's poller). Those send to other threads, so ThreadMgr calls this
  // after every loop has exited and before it destroys any thread.
  virtual void JoinHelpers() {}

  bool InThisThread() const { return thread_internal::current_thread == this; }
  // Whether the local queue is empty: loop thread only. A caller that
  // delivers a message by a direct call instead of sending it must do so
  // only when this holds, or it could overtake a queued one.
  bool local_queue_empty() const { return local_.empty(); }
  const StreamKey& key() const { return key_; }
  virtual DeviceKind device_kind() const = 0;

  // Messages handled from each path; read them after Stop().
  uint64_t local_msg_count() const { return local_msg_count_; }
  uint64_t channel_msg_count() const { return channel_msg_count_; }

 protected:
  // Hooks run on the loop thread (a GPU thread binds its device here).
  virtual void OnLoopStart() {}
  virtual void OnLoopEnd() {}

  // Hands one message from the local queue or the channel to the handler.
  void HandleLocal(const Msg& msg) {
    ++local_msg_count_;
    handler_->Handle(msg);
  }
  void HandleReceived(const Msg& msg) {
    ++channel_msg_count_;
    handler_->Handle(msg);
  }

  Channel<Msg> channel_;
  // Private to whichever thread runs the loop.
  RingQueue<Msg> local_;
  std::vector<Msg> batch_;
  std::atomic<bool> abandoned_{false};

 private:
  // Out of line so that Send stays small enough to inline.
  __attribute__((noinline, cold)) absl::Status StoppedError() const {
    return absl::FailedPreconditionError(
        absl::StrCat("thread ", key_.ToString(), " is stopped"));
  }

  void Loop() {
    // Counted as awake while it runs or spins (spin_wait.h).
    struct Counted {
      Counted() { cpu_gate::Join(); }
      ~Counted() { cpu_gate::Leave(); }
    } counted;
    thread_internal::current_thread = this;
    thread_internal::current_parker_slot = channel_.parker_slot();
    // Linux limits thread names to 15 characters.
    pthread_setname_np(pthread_self(), key_.ToString().substr(0, 15).c_str());
    OnLoopStart();
    while (true) {
      while (!local_.empty()) {
        if (__builtin_expect(abandoned(), 0)) return;
        HandleLocal(local_.Pop());
      }
      batch_.clear();
      // The local queue is empty here, so blocking is safe.
      if (channel_.ReceiveMany(&batch_) == ChannelStatus::kClosed) break;
      for (const Msg& msg : batch_) {
        if (__builtin_expect(abandoned(), 0)) return;
        HandleReceived(msg);
      }
    }
    OnLoopEnd();
    thread_internal::current_thread = nullptr;
  }

  const StreamKey key_;
  MsgHandler<Msg>* const handler_;
  uint64_t local_msg_count_ = 0;
  uint64_t channel_msg_count_ = 0;
  std::thread os_thread_;
};

// The CPU kind: kernels run inline on the loop thread.
template <typename Msg>
class CpuThread final : public Thread<Msg> {
 public:
  using Thread<Msg>::Thread;
  ~CpuThread() override { this->Stop(); }
  DeviceKind device_kind() const override { return DeviceKind::kCpu; }
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_THREAD_H_
