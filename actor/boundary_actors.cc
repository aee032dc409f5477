#include "actor/boundary_actors.h"

namespace actorflow::internal {

void FeedActor::Drive() {
  OutSlot& slot = out_[0];
  while (true) {
    // Every free register goes to the caller; it stays counted as free.
    // (A consumer on this thread may have handed one back during the
    // last Publish.)
    if (!slot.free.empty()) {
      while (!slot.free.empty()) port_->Release(slot.free.Pop());
      ++blockers_;
    }
    if (state_ != State::kActing || !started_ || env_.monitor->aborting()) {
      break;
    }
    Register* reg = port_->PopFilled();
    if (reg == nullptr) break;
    reg->set_piece_id(next_piece_++);
    CountAct();
    --free_registers_;
    Publish(reg);
  }
  supply_ended_ = started_ && port_->Drained();
}

void FetchActor::Drive() {
  InSlot& slot = in_[0];
  while (state_ == State::kActing && !env_.monitor->aborting() &&
         !slot.ready.empty()) {
    Register* reg = slot.ready.Pop().reg;
    if (slot.ready.empty()) ++blockers_;
    CountAct();
    if (!port_->Push(reg)) ReturnToProducer(reg);
  }
}

}  // namespace actorflow::internal
