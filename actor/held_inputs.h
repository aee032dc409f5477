#ifndef ACTORFLOW_ACTOR_HELD_INPUTS_H_
#define ACTORFLOW_ACTOR_HELD_INPUTS_H_

#include <memory>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "actor/actor_msg.h"
#include "actorflow/kernel.h"
#include "base/mutex.h"
#include "memory/synced_memory.h"
#include "thread/thread.h"

// Input registers a kernel keeps after its act returns, for something that
// reads their bytes later: net_send hands a register's blobs to gRPC as
// slices over the register's own memory, and gRPC writes them to the socket
// after Forward has returned. Each held register goes back to its producer
// when the holder releases it, from whatever thread that is.
//
// A producer finishes its run only once every register it made is back
// (actor.h), so no run ends, cancelled or not, while a hold is out: whoever
// holds must return the registers on every path (the transport does when
// gRPC lets go of them, and at once when the job fails). A late return,
// after the session's threads stopped, is dropped (ReturnRoute); the held
// registers' memory stays allocated until the hold goes, so a reader never
// reads freed bytes.
namespace actorflow::internal {

class Register;

// Where the returns of one session's holds go. Shared by the session and
// every hold taken in it.
class ReturnRoute {
 public:
  // Sends each return unless the route is closed. Under the lock, so that
  // Close waits for a send under way. Any thread.
  void Send(absl::Span<const std::pair<Thread<ActorMsg>*, ActorMsg>> returns);
  // The session's threads are about to stop: later returns are dropped.
  void Close();

 private:
  Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

class HeldInputs {
 public:
  explicit HeldInputs(std::shared_ptr<ReturnRoute> route)
      : route_(std::move(route)) {}
  // Returns the registers, if that was not done.
  ~HeldInputs() { Return(); }
  HeldInputs(const HeldInputs&) = delete;
  HeldInputs& operator=(const HeldInputs&) = delete;

  // On the act's thread, during the act.
  void Add(Register* reg);
  // Each register back to its producer, once; its memory stays allocated
  // until this object goes. Any thread, one at a time. A holder returns
  // early only when what still reads the bytes no longer matters (a
  // failed job's cancelled stream that gRPC has not let go of yet): the
  // producer may write the register again at once.
  void Return();
  // Return, and the memory goes too: nothing reads the bytes any more.
  void Release() {
    Return();
    memory_.clear();
  }

 private:
  std::shared_ptr<ReturnRoute> route_;
  absl::InlinedVector<std::pair<Thread<ActorMsg>*, ActorMsg>, 2> returns_;
  absl::InlinedVector<std::shared_ptr<SyncedMemory>, 2> memory_;
  bool returned_ = false;
};

// What a kernel's context reaches to hold its inputs (KernelActor).
class InputHolder {
 public:
  // Null where the act cannot hold them (see HoldInputs).
  virtual std::unique_ptr<HeldInputs> HoldInputs() = 0;

 protected:
  ~InputHolder() = default;
};

// During Forward, on the kernel's thread: keeps every input register of
// this act out of its producer's hands until the result is released (or
// destroyed). Call at most once per act, and only once the act can no
// longer fail: the act's inputs then stay out whatever Forward returns.
// Null where it cannot: an act on an asynchronous stream, a context not
// made by an actor, an input whose memory the register does not own (a
// caller's buffer, device memory).
std::unique_ptr<HeldInputs> HoldInputs(const KernelContext& ctx);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_HELD_INPUTS_H_
