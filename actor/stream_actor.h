#ifndef ACTORFLOW_ACTOR_STREAM_ACTOR_H_
#define ACTORFLOW_ACTOR_STREAM_ACTOR_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "actor/kernel_actor.h"
#include "base/mutex.h"
#include "thread/async_thread.h"
#include "thread/blocking_counter.h"

namespace actorflow::internal {

// A kernel actor on an asynchronous stream (ActorSpec::async_thread): an
// act queues the kernel on the stream and a callback on the poller; the
// callback, once the kernel has run, sends what the act made and returns
// what it read. So no consumer sees a register before the work that filled
// it is done. EORD goes the same way, after every earlier callback.
class StreamActor : public KernelActor {
 public:
  // Takes the spec's kernel.
  StreamActor(ActorSpec& spec, ActorEnv env);

  absl::Status DrainStream() override;

 protected:
  void Drive() override {
    while (Unblocked() && GateOpen()) {
      Act(in_[0].ready.front().piece_id);
    }
  }
  // One act on `piece`, queued on the stream; false if it failed before.
  bool Act(int64_t piece);

 private:
  struct AsyncAct {
    ActContext ctx;         // this act's registers and piece
    absl::Status status;    // the kernel's, written on the stream worker
    int64_t launch_ns = 0;  // traced runs only
  };

  void OnReset() override {
    KernelActor::OnReset();
    last_async_end_ns_ = 0;
  }
  // After the callbacks of every act, so EORD cannot overtake a register.
  void EndOutputs() override;
  // On this actor's thread, after a kAsyncFailed command.
  void OnAsyncFailed() override;
  // On the poller.
  void FinishAsync(AsyncAct* act);
  // A return as a message, from any thread (never a direct call).
  void SendReturn(Register* reg);

  AsyncThread<ActorMsg>* const async_;
  // DrainStream: the poller's callback sets the status, then counts down.
  // Members, not locals: the poller may still be inside Decrement when the
  // waiting thread returns.
  BlockingCounter drained_{0};
  absl::Status drain_status_;
  // A ring: an act in flight holds at least one register, so there are
  // never more in flight than registers, and slots are reused in order.
  std::vector<std::unique_ptr<AsyncAct>> async_acts_;
  size_t async_next_ = 0;
  Mutex async_failed_mu_;
  std::vector<AsyncAct*> async_failed_ ABSL_GUARDED_BY(async_failed_mu_);
  int64_t last_async_end_ns_ = 0;  // the poller's
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_STREAM_ACTOR_H_
