#include "actor/stream_actor.h"

#include <algorithm>
#include <utility>

#include "absl/container/inlined_vector.h"

namespace actorflow::internal {

StreamActor::StreamActor(ActorSpec& spec, ActorEnv env)
    : KernelActor(spec, env), async_(spec.async_thread) {
  ctx_.set_cuda_stream(async_->stream()->native_handle());
  // Its kernel runs on the stream, after the act: nothing to hold there.
  ctx_.mutable_rep().holder = nullptr;
  int64_t registers = total_registers_;
  for (const InSlot& slot : in_) registers += slot.desc->register_num;
  async_acts_.reserve(registers);
  for (int64_t i = 0; i < registers; ++i) {
    auto act = std::make_unique<AsyncAct>();
    act->ctx = ctx_;  // groups and sizes; registers are set per act
    async_acts_.push_back(std::move(act));
  }
}

bool StreamActor::Act(int64_t piece) {
  if (!TakeRegisters(piece)) return false;
  AsyncAct* act = async_acts_[async_next_++ % async_acts_.size()].get();
  std::copy(ctx_.inputs(), ctx_.inputs() + num_in_, act->ctx.inputs());
  std::copy(ctx_.outputs(), ctx_.outputs() + num_out_, act->ctx.outputs());
  act->ctx.set_piece_id(piece);
  if (env_.trace | env_.timed) act->launch_ns = SteadyNowNs();

  // The act counts as done here; only its sends wait for the stream.
  CountAct();
  PopInputs();
  for (int o = 0; o < num_out_; ++o) {
    Register* reg = AsRegister(act->ctx.outputs()[o]);
    const RegisterDesc& desc = reg->desc();
    if (desc.consumers.empty()) {
      // Nobody reads it. The stream runs in order, so the next act that
      // writes it does so after this one.
      PushFree(out_[o], reg);
    } else {
      reg->set_reading_cnt(static_cast<int32_t>(desc.consumers.size()));
    }
  }

  async_->stream()->Submit([this, act] {
    act->status = CallKernel(&act->ctx);
    return act->status;
  });
  // The act's own error comes first; otherwise the event's (a device fault
  // in the act's work, or a sticky one from earlier work on the stream).
  absl::Status added = async_->poller()->AddCallback(
      async_->stream(), [this, act](absl::Status event) {
        if (act->status.ok()) act->status = std::move(event);
        FinishAsync(act);
      });
  if (!added.ok()) env_.monitor->ReportFailure(added);
  return true;
}

void StreamActor::FinishAsync(AsyncAct* act) {
  if (env_.trace | env_.timed) {
    const int64_t end = SteadyNowNs();
    // The stream runs acts in order: this one began when it was queued or
    // when the one before it ended, whichever was later.
    AddTo(&stats_.busy_ns, end - std::max(act->launch_ns, last_async_end_ns_));
    last_async_end_ns_ = end;
    if (env_.trace)
      trace_.push_back({act->ctx.piece_id(), act->launch_ns, end});
  }
  if (!act->status.ok()) {
    // The registers stay with the act; this actor's thread frees them.
    {
      MutexLock lock(&async_failed_mu_);
      async_failed_.push_back(act);
    }
    Send(async_, ActorMsg::Cmd(id_, ActorCmd::kAsyncFailed));
    return;
  }
  // Copied out first: once anything is sent, a register can come back and
  // this slot be reused by a later act.
  absl::InlinedVector<Register*, 8> outputs, inputs;
  for (int o = 0; o < num_out_; ++o)
    outputs.push_back(AsRegister(act->ctx.outputs()[o]));
  for (int i = 0; i < num_in_; ++i)
    inputs.push_back(AsRegister(act->ctx.inputs()[i]));
  for (Register* reg : outputs) {
    for (const RegisterConsumer& consumer : reg->desc().consumers) {
      Send(consumer.thread, ActorMsg::Ready(consumer.actor, consumer.in_slot,
                                            reg, reg->piece_id()));
    }
  }
  for (Register* reg : inputs) SendReturn(reg);
}

void StreamActor::SendReturn(Register* reg) {
  const RegisterDesc& desc = reg->desc();
  Send(desc.producer_thread,
       ActorMsg::Return(desc.producer, desc.producer_out_slot, reg));
}

void StreamActor::EndOutputs() {
  absl::Status added = async_->poller()->AddCallback(
      async_->stream(), [this](absl::Status) { SendEords(); });
  if (!added.ok()) env_.monitor->ReportFailure(added);
}

void StreamActor::OnAsyncFailed() {
  std::vector<AsyncAct*> failed;
  {
    MutexLock lock(&async_failed_mu_);
    failed.swap(async_failed_);
  }
  for (AsyncAct* act : failed) {
    for (int o = 0; o < num_out_; ++o) {
      Register* reg = AsRegister(act->ctx.outputs()[o]);
      if (!reg->desc().consumers.empty()) PushFree(out_[o], reg);
    }
    for (int i = 0; i < num_in_; ++i)
      SendReturn(AsRegister(act->ctx.inputs()[i]));
    Fail(act->status, act->ctx.piece_id());
  }
}

absl::Status StreamActor::DrainStream() {
  // The poller runs callbacks in stream order: this one runs once every
  // act queued before it is done.
  drained_.Reset(1);
  absl::Status added = async_->poller()->AddCallback(
      async_->stream(), [this](absl::Status status) {
        drain_status_ = std::move(status);
        drained_.Decrement();
      });
  if (!added.ok()) return added;
  drained_.Wait();
  return drain_status_;
}

}  // namespace actorflow::internal
