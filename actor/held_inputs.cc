#include "actor/held_inputs.h"

#include "actor/act_context.h"
#include "actor/register.h"

namespace actorflow::internal {

void ReturnRoute::Send(
    absl::Span<const std::pair<Thread<ActorMsg>*, ActorMsg>> returns) {
  MutexLock lock(&mu_);
  if (closed_) return;
  // Through the channel even on the producer's own thread: a release runs
  // inside gRPC, possibly while that thread waits in the transport's
  // completion queue, where its local queue is not looked at.
  for (const auto& [thread, msg] : returns) (void)thread->SendToChannel(msg);
}

void ReturnRoute::Close() {
  MutexLock lock(&mu_);
  closed_ = true;
}

void HeldInputs::Add(Register* reg) {
  const RegisterDesc& desc = reg->desc();
  returns_.emplace_back(
      desc.producer_thread,
      ActorMsg::Return(desc.producer, desc.producer_out_slot, reg));
  memory_.push_back(reg->memory_ptr());
}

void HeldInputs::Return() {
  if (returned_) return;
  returned_ = true;
  route_->Send(returns_);
}

std::unique_ptr<HeldInputs> HoldInputs(const KernelContext& ctx) {
  // Every KernelContext is an ActContext (its constructor is protected).
  InputHolder* holder = static_cast<const ActContext&>(ctx).rep().holder;
  return holder == nullptr ? nullptr : holder->HoldInputs();
}

}  // namespace actorflow::internal
