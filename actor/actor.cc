#include "actor/actor.h"

#include <algorithm>
#include <exception>

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

// At most register_num of a producer's registers are ready at once, and
// as many are free or deferred: rings of that many (a few bytes, not the
// default's kilobyte) keep a large plan's working set small.
std::vector<Actor::InSlot> Actor::InSlotsOf(const ActorSpec& spec) {
  std::vector<InSlot> slots;
  for (const auto& [name, descs] : spec.inputs) {
    for (RegisterDesc* desc : descs) {
      slots.push_back(
          InSlot{desc, RingQueue<ReadyRegister, 2>(desc->register_num)});
    }
  }
  return slots;
}

std::vector<Actor::OutSlot> Actor::OutSlotsOf(const ActorSpec& spec) {
  std::vector<OutSlot> slots;
  for (const auto& [name, desc] : spec.outputs) {
    slots.push_back(OutSlot{desc, RegisterRing(desc->register_num),
                            RegisterRing(desc->register_num)});
    for (auto& reg : desc->registers) slots.back().free.Push(reg.get());
  }
  return slots;
}

Actor::Actor(ActorSpec& spec, ActorEnv env)
    : id_(spec.id),
      task_(spec.task),
      kernel_(std::move(spec.kernel)),
      gate_(kernel_ != nullptr ? kernel_->gate() : nullptr),
      env_(env),
      batches_(spec.batches_deliveries),
      in_(InSlotsOf(spec)),
      out_(OutSlotsOf(spec)),
      lag_(!spec.outputs.empty() && spec.outputs[0].second->initial_register
               ? 1
               : 0) {
  ctx_.set_stream(spec.stream);
  ctx_.set_task(task_);
  ctx_.mutable_rep().held_bytes = &held_bytes_;
  ctx_.set_cancelled(env_.monitor != nullptr ? env_.monitor->aborting_flag()
                                             : nullptr);
  int in_slot = 0;
  for (const auto& [name, descs] : spec.inputs) {
    const int begin = in_slot;
    in_slot += static_cast<int>(descs.size());
    ctx_.mutable_rep().input_groups.push_back({name, begin, in_slot});
  }
  int out_slot = 0;
  for (const auto& [name, desc] : spec.outputs) {
    for (const RegisterConsumer& consumer : desc->consumers) {
      // Actors are constructed on their own threads.
      if (!consumer.thread->InThisThread()) publishes_first_ = true;
    }
    ctx_.mutable_rep().output_groups.push_back({name, out_slot, out_slot + 1});
    ++out_slot;
    total_registers_ += desc->register_num;
    register_memory_ += desc->register_num * desc->layout.bytes;
    resets_shapes_ |= desc->has_dynamic_blob;
    checks_blocks_ |= desc->checked_block != nullptr;
  }
  for (const InSlot& slot : in_)
    checks_blocks_ |= slot.desc->checked_block != nullptr;
  free_registers_ = total_registers_;
  num_in_ = static_cast<int>(in_.size());
  num_out_ = static_cast<int>(out_.size());
  blockers_ = num_in_;  // every output starts free
  ctx_.ResizeRegisters(num_in_, num_out_);
  state_ = State::kFinished;  // until the first kReset
}

void Actor::ReleaseBlock(Register* reg) {
  const RegisterDesc& desc = reg->desc();
  if (desc.checked_block == nullptr) return;
  desc.checked_block->ReleaseIfHeld(desc.id, reg->base(),
                                    static_cast<size_t>(desc.layout.bytes));
}

void Actor::Reset() {
  state_ = State::kActing;
  started_ = false;
  held_ = false;
  supply_ended_ = false;
  initial_pending_ = lag_ != 0;
  ended_in_ = 0;
  blockers_ = 0;
  for (InSlot& slot : in_) {
    slot.ended = false;
    blockers_ += slot.ready.empty();
  }
  for (OutSlot& slot : out_) {
    blockers_ += slot.free.empty();
    // A failed run may have left its register holding the block.
    if (slot.desc->checked_block != nullptr) {
      slot.desc->checked_block->ReleaseIfHeld(slot.desc->id, nullptr, 0);
    }
  }
  // The initial register is the run's first piece: no act before kStart
  // has published it, though inputs from actors started earlier (on other
  // threads) may arrive first.
  blockers_ += initial_pending_ ? 1 : 0;
  piece_end_ = next_piece_ + *env_.pieces;
  stats_.busy_ns.store(0, std::memory_order_relaxed);
  stats_.input_wait_ns.store(0, std::memory_order_relaxed);
  stats_.output_wait_ns.store(0, std::memory_order_relaxed);
  blocked_ = Blocked::kNone;
  trace_.clear();
  OnReset();
}

void Actor::ProcessMsg(const ActorMsg& msg) {
  switch (msg.kind) {
    case ActorMsgKind::kRegisterReady:
      AcceptReady(msg.slot, msg.reg, msg.piece_id);
      break;
    case ActorMsgKind::kRegisterReturn: {
      Register* reg = msg.reg;
      if (reg->ReadingDone()) PushFree(out_[msg.slot], reg);
      break;
    }
    case ActorMsgKind::kEord: {
      InSlot& slot = in_[msg.slot];
      if (!slot.ended) {
        slot.ended = true;
        ++ended_in_;
      }
      break;
    }
    case ActorMsgKind::kCmd:
      switch (msg.cmd) {
        case ActorCmd::kReset:
          Reset();
          env_.resetting->Decrement();
          return;  // nothing may act before kStart
        case ActorCmd::kStart:
          started_ = true;
          OnStart();
          break;
        case ActorCmd::kAsyncFailed:
          OnAsyncFailed();
          break;
        case ActorCmd::kEndSupply:
          EndSupplyAt(msg.piece_id);
          break;
        default:  // kFed: Progress looks at the feed port; kWake
          break;
      }
      break;
  }
  Progress();
}

void Actor::DeliverDeferred() {
  deferred_ = 0;
  for (OutSlot& slot : out_) {
    for (const RegisterConsumer& consumer : slot.desc->consumers) {
      if (consumer.thread->InThisThread()) continue;
      for (size_t i = 0; i < slot.deferred.size(); ++i) {
        SendReady(consumer, slot.deferred.at(i));
      }
    }
  }
  for (OutSlot& slot : out_) {
    if (slot.deferred.empty()) continue;
    // Nothing else publishes on this slot meanwhile (this actor is busy),
    // so the ring holds still.
    for (const RegisterConsumer& consumer : slot.desc->consumers) {
      if (!consumer.thread->InThisThread()) continue;
      if (actor_internal::MayDeliverDirectly(consumer)) {
        ++actor_internal::direct_call_depth;
        consumer.actor_ptr->OnRegistersReady(consumer.in_slot, slot.deferred);
        --actor_internal::direct_call_depth;
      } else {
        for (size_t i = 0; i < slot.deferred.size(); ++i) {
          SendReady(consumer, slot.deferred.at(i));
        }
      }
    }
    slot.deferred.clear();
  }
}

void Actor::MaybeEnd() {
  if (state_ == State::kActing) {
    bool end = failed_ || env_.monitor->aborting() || supply_ended_;
    if (!end && ended_in_ > 0) {
      // An input that has ended and is empty can never feed another act.
      for (const InSlot& slot : in_) {
        if (slot.ended && slot.ready.empty()) {
          end = true;
          break;
        }
      }
    }
    if (end) EnterZombie();
  }
  if (state_ == State::kZombie && ended_in_ == in_.size() &&
      free_registers_ == total_registers_) {
    state_ = State::kFinished;
    env_.monitor->OnActorFinished();
  }
}

void Actor::EnterZombie() {
  state_ = State::kZombie;
  StopActing();
  EndOutputs();
  for (InSlot& slot : in_) {
    if (slot.ready.empty()) continue;
    while (!slot.ready.empty()) ReturnToProducer(slot.ready.Pop().reg);
    ++blockers_;
  }
}

void Actor::SendEords() {
  for (const OutSlot& slot : out_) {
    for (const RegisterConsumer& consumer : slot.desc->consumers) {
      Send(consumer.thread, ActorMsg::Eord(consumer.actor, consumer.in_slot));
    }
  }
}

void Actor::ReportLostMessage(const ActorMsg& msg) {
  env_.monitor->ReportFailure(absl::InternalError(
      absl::StrCat("task '", task_->name(), "': message to actor ", msg.dst,
                   " lost: its thread has stopped")));
}

void Actor::StopWaiting() {
  if (blocked_ == Blocked::kNone) return;
  int64_t waited = SteadyNowNs() - blocked_since_ns_;
  AddTo(blocked_ == Blocked::kInput ? &stats_.input_wait_ns
                                    : &stats_.output_wait_ns,
        waited);
  blocked_ = Blocked::kNone;
}

// Boundary actors wait on their caller, which is in neither column.
void Actor::StartWaiting() {
  if (state_ != State::kActing || WaitsOnCaller() ||
      (in_.empty() && !started_)) {
    return;
  }
  for (const InSlot& slot : in_) {
    if (slot.ready.empty()) {
      blocked_ = Blocked::kInput;
      break;
    }
  }
  if (blocked_ == Blocked::kNone) {
    for (const OutSlot& slot : out_) {
      if (slot.free.empty()) {
        blocked_ = Blocked::kOutput;
        break;
      }
    }
  }
  if (blocked_ != Blocked::kNone) blocked_since_ns_ = SteadyNowNs();
}

int64_t Actor::HoldSupply() {
  if (!in_.empty() || WaitsOnCaller()) return -1;
  if (!held_) {
    held_ = true;
    ++blockers_;
  }
  return next_piece_;
}

void Actor::EndSupplyAt(int64_t piece) {
  if (!in_.empty() || WaitsOnCaller()) return;
  piece_end_ = std::min(piece_end_, std::max(next_piece_, piece));
  if (held_) {
    held_ = false;
    --blockers_;
  }
}

ActorSnapshot Actor::Snapshot() const {
  ActorSnapshot snapshot;
  snapshot.state = state_ == State::kActing   ? ActorSnapshot::State::kActing
                   : state_ == State::kZombie ? ActorSnapshot::State::kEnded
                                              : ActorSnapshot::State::kFinished;
  snapshot.is_source = in_.empty();
  snapshot.started = started_;
  snapshot.acts = act_count();
  snapshot.next_piece = next_piece_;
  snapshot.piece_end = piece_end_;
  for (const KernelContext::Rep::Group& group : ctx_.rep().input_groups) {
    for (int i = group.begin; i < group.end; ++i) {
      snapshot.inputs.push_back({in_[i].desc->id, group.name,
                                 static_cast<int64_t>(in_[i].ready.size()),
                                 in_[i].ended});
    }
  }
  for (const KernelContext::Rep::Group& group : ctx_.rep().output_groups) {
    const OutSlot& slot = out_[group.begin];
    snapshot.outputs.push_back({slot.desc->id, group.name,
                                static_cast<int64_t>(slot.free.size()),
                                slot.desc->register_num});
  }
  return snapshot;
}

KernelStateContext Actor::StateContext(int64_t piece) const {
  KernelStateContext ctx;
  ctx.task_name = task_->name();
  ctx.stream = ctx_.stream();
  ctx.cuda_stream = ctx_.cuda_stream();
  ctx.piece = piece;
  return ctx;
}

void Actor::Fail(const absl::Status& status, int64_t piece_id) {
  failed_ = true;
  StopActing();
  env_.monitor->ReportFailure(absl::Status(
      status.code(),
      absl::StrCat("task '", task_->name(), "' (task_id ", task_->task_id(),
                   ") failed at piece ", piece_id, ": ", status.message())));
}

}  // namespace actorflow::internal
