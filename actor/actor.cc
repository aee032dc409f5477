#include "actor/actor.h"

#include <exception>

#include "absl/strings/str_cat.h"

namespace actorflow {

Actor::Actor(ActorSpec spec, ActorEnv env)
    : index_(spec.index),
      task_(spec.task),
      kernel_(std::move(spec.kernel)),
      env_(env) {
  ctx_.stream_ = spec.stream;
  ctx_.task_ = task_;
  for (auto& [name, descs] : spec.inputs) {
    KernelContext::Group group{name, static_cast<int>(in_.size()), 0};
    for (RegstDesc* desc : descs) {
      in_.emplace_back();
      in_.back().desc = desc;
    }
    group.end = static_cast<int>(in_.size());
    ctx_.input_groups_.push_back(group);
  }
  for (auto& [name, desc] : spec.outputs) {
    int slot = static_cast<int>(out_.size());
    ctx_.output_groups_.push_back({name, slot, slot + 1});
    out_.emplace_back();
    out_.back().desc = desc;
    for (auto& regst : desc->regsts) out_.back().free.Push(regst.get());
    total_regsts_ += desc->register_num;
    if (desc->register_num > 0) ++nonempty_out_;
  }
  free_regsts_ = total_regsts_;
  ctx_.inputs_.resize(in_.size());
  ctx_.outputs_.resize(out_.size());
}

void Actor::ProcessMsg(const ActorMsg& msg) {
  switch (msg.kind) {
    case ActorMsgKind::kRegstReady: {
      if (state_ != State::kActing) {
        ReturnToProducer(msg.regst);  // no more acts: hand it back unread
        break;
      }
      InSlot& slot = in_[msg.slot];
      if (slot.ready.empty()) ++nonempty_in_;
      slot.ready.Push(msg.regst);
      break;
    }
    case ActorMsgKind::kRegstReturn: {
      Regst* regst = msg.regst;
      if (--regst->reading_cnt == 0) {
        OutSlot& slot = out_[msg.slot];
        if (slot.free.empty()) ++nonempty_out_;
        slot.free.Push(regst);
        ++free_regsts_;
      }
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
      if (msg.cmd == ActorCmd::kStart) started_ = true;
      break;
  }
  while (CanAct()) Act();
  MaybeEnd();
}

bool Actor::CanAct() const {
  if (state_ != State::kActing || failed_ || nonempty_in_ != in_.size() ||
      nonempty_out_ != out_.size() || env_.monitor->aborting()) {
    return false;
  }
  return !is_source() || (started_ && next_piece_ < env_.total_piece_num);
}

void Actor::Act() {
  int64_t piece = is_source() ? next_piece_ : in_[0].ready.front()->piece_id();
  for (size_t i = 0; i < in_.size(); ++i) {
    Regst* regst = in_[i].ready.front();
    if (regst->piece_id() != piece) {
      // Producers emit pieces in order and the channels keep it, so inputs
      // cannot drift apart unless the runtime itself is broken.
      Fail(absl::InternalError(absl::StrCat(
               "inputs out of step: regst_desc ", in_[0].desc->id,
               " holds piece ", piece, " but regst_desc ", in_[i].desc->id,
               " holds piece ", regst->piece_id())),
           piece);
      return;
    }
    ctx_.inputs_[i] = regst;
  }
  for (size_t o = 0; o < out_.size(); ++o) {
    OutSlot& slot = out_[o];
    Regst* regst = slot.free.Pop();
    if (slot.free.empty()) --nonempty_out_;
    --free_regsts_;
    regst->set_piece_id(piece);
    ctx_.outputs_[o] = regst;
  }
  ctx_.piece_id_ = piece;

  absl::Status status;
  try {
    status = kernel_->Forward(&ctx_);
  } catch (const std::exception& e) {
    status = absl::InternalError(absl::StrCat("kernel threw: ", e.what()));
  } catch (...) {
    status = absl::InternalError("kernel threw a non-std exception");
  }
  if (!status.ok()) {
    for (size_t o = 0; o < out_.size(); ++o) {
      OutSlot& slot = out_[o];
      if (slot.free.empty()) ++nonempty_out_;
      slot.free.Push(ctx_.outputs_[o]);
      ++free_regsts_;
    }
    Fail(status, piece);
    return;  // MaybeEnd returns the inputs on the way to the zombie state
  }

  if (is_source()) ++next_piece_;
  for (Regst* regst : ctx_.outputs_) Publish(regst);
  for (InSlot& slot : in_) {
    Regst* regst = slot.ready.Pop();
    if (slot.ready.empty()) --nonempty_in_;
    ReturnToProducer(regst);
  }
  ++act_count_;
}

void Actor::MaybeEnd() {
  if (state_ == State::kActing) {
    bool end = failed_ || env_.monitor->aborting();
    if (!end && is_source()) {
      end = started_ && next_piece_ >= env_.total_piece_num;
    }
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
      free_regsts_ == total_regsts_) {
    state_ = State::kFinished;
    env_.monitor->OnActorFinished();
  }
}

void Actor::EnterZombie() {
  state_ = State::kZombie;
  for (const OutSlot& slot : out_) {
    for (const RegstConsumer& consumer : slot.desc->consumers) {
      Send(ActorMsg::Eord(consumer.actor, consumer.in_slot));
    }
  }
  for (InSlot& slot : in_) {
    while (!slot.ready.empty()) ReturnToProducer(slot.ready.Pop());
  }
  nonempty_in_ = 0;
}

void Actor::Publish(Regst* regst) {
  const RegstDesc& desc = regst->desc();
  if (desc.consumers.empty()) {
    // Nobody reads it: free again at once.
    OutSlot& slot = out_[desc.producer_out_slot];
    if (slot.free.empty()) ++nonempty_out_;
    slot.free.Push(regst);
    ++free_regsts_;
    return;
  }
  regst->reading_cnt = static_cast<int32_t>(desc.consumers.size());
  for (const RegstConsumer& consumer : desc.consumers) {
    Send(ActorMsg::Ready(consumer.actor, consumer.in_slot, regst));
  }
}

void Actor::ReturnToProducer(Regst* regst) {
  const RegstDesc& desc = regst->desc();
  Send(ActorMsg::Return(desc.producer, desc.producer_out_slot, regst));
}

// Threads stop only after every actor has finished, so a refused send is a
// runtime bug; report it rather than lose the message silently.
void Actor::ReportLostMessage(const ActorMsg& msg, const absl::Status& status) {
  env_.monitor->ReportFailure(absl::InternalError(
      absl::StrCat("task '", task_->name(), "': message to actor ", msg.dst,
                   " lost: ", status.message())));
}

void Actor::Fail(const absl::Status& status, int64_t piece_id) {
  failed_ = true;
  env_.monitor->ReportFailure(absl::Status(
      status.code(),
      absl::StrCat("task '", task_->name(), "' (task_id ", task_->task_id(),
                   ") failed at piece ", piece_id, ": ", status.message())));
}

}  // namespace actorflow
