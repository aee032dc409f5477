// Boundary actors: `feed` and `fetch` (see Actor and Session).
#include "actor/actor.h"

namespace actorflow {

void Actor::ProgressBoundary() {
  if (feed_port_ != nullptr) {
    OutSlot& slot = out_[0];
    while (true) {
      // Every free register goes to the caller; it stays counted as free.
      // (A consumer on this thread may have handed one back during the
      // last Publish.)
      if (!slot.free.empty()) {
        while (!slot.free.empty()) feed_port_->Release(slot.free.Pop());
        ++blockers_;
      }
      if (state_ != State::kActing || !started_ || env_.monitor->aborting()) {
        return;
      }
      Regst* regst = feed_port_->PopFilled();
      if (regst == nullptr) return;
      regst->set_piece_id(next_piece_++);
      CountAct();
      --free_regsts_;
      Publish(regst);
    }
  }
  InSlot& slot = in_[0];
  while (state_ == State::kActing && !env_.monitor->aborting() &&
         !slot.ready.empty()) {
    Regst* regst = slot.ready.Pop().regst;
    if (slot.ready.empty()) ++blockers_;
    CountAct();
    if (!fetch_port_->Push(regst)) ReturnToProducer(regst);
  }
}

}  // namespace actorflow
