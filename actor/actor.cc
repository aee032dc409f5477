#include "actor/actor.h"

#include <algorithm>
#include <exception>

#include "absl/strings/str_cat.h"

namespace actorflow {

Actor::Actor(ActorSpec spec, ActorEnv env)
    : feed_port_(spec.feed_port),
      fetch_port_(spec.fetch_port),
      boundary_(feed_port_ != nullptr || fetch_port_ != nullptr),
      id_(spec.id),
      task_(spec.task),
      kernel_(std::move(spec.kernel)),
      gate_(kernel_ != nullptr ? kernel_->gate() : nullptr),
      env_(env),
      is_source_(spec.inputs.empty()),
      lag_(!spec.outputs.empty() && spec.outputs[0].second->initial_register
               ? 1
               : 0),
      stateful_(kernel_ != nullptr && kernel_->has_state()) {
  ctx_.stream_ = spec.stream;
  ctx_.task_ = task_;
  ctx_.cancelled_ =
      env_.monitor != nullptr ? env_.monitor->aborting_flag() : nullptr;
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
    for (const RegstConsumer& consumer : desc->consumers) {
      // Actors are constructed on their own threads.
      if (!consumer.thread->InThisThread()) publishes_first_ = true;
    }
    int slot = static_cast<int>(out_.size());
    ctx_.output_groups_.push_back({name, slot, slot + 1});
    out_.emplace_back();
    out_.back().desc = desc;
    for (auto& regst : desc->regsts) out_.back().free.Push(regst.get());
    total_regsts_ += desc->register_num;
    resets_shapes_ |= desc->has_dynamic_blob;
    checks_blocks_ |= desc->checked_block != nullptr;
  }
  for (const InSlot& slot : in_)
    checks_blocks_ |= slot.desc->checked_block != nullptr;
  free_regsts_ = total_regsts_;
  num_in_ = static_cast<int>(in_.size());
  num_out_ = static_cast<int>(out_.size());
  blockers_ = num_in_;  // every output starts free
  ctx_.inputs_.resize(in_.size());
  ctx_.outputs_.resize(out_.size());
  if (spec.async_thread != nullptr) InitAsync(spec.async_thread);
  state_ = State::kFinished;  // until the first kReset
}

namespace {
char* RegstBase(const Regst& regst) {
  return regst.num_blobs() == 0
             ? nullptr
             : regst.blob(0).data - regst.desc().layout.offsets[0];
}
absl::Status SharingBroken(const std::string& what) {
  return absl::InternalError(absl::StrCat(
      what, " (memory sharing that the plan's shape does not allow)"));
}
}  // namespace

absl::Status Actor::ClaimBlocks(RegstBlobs** outputs) {
  for (int o = 0; o < num_out_; ++o) {
    const RegstDesc& desc = AsRegst(outputs[o])->desc();
    if (desc.checked_block == nullptr) continue;
    // Claimed ones stay claimed until PushFree releases them.
    std::string broken = desc.checked_block->Claim(
        desc.id, static_cast<int>(desc.consumers.size()));
    if (!broken.empty()) return SharingBroken(broken);
  }
  return absl::OkStatus();
}

absl::Status Actor::ReadBlocks(RegstBlobs** inputs) {
  for (int i = 0; i < num_in_; ++i) {
    const RegstDesc& desc = AsRegst(inputs[i])->desc();
    if (desc.checked_block == nullptr) continue;
    std::string broken =
        desc.checked_block->ReaderDone(desc.id, RegstBase(*AsRegst(inputs[i])),
                                       static_cast<size_t>(desc.layout.bytes));
    if (!broken.empty()) return SharingBroken(broken);
  }
  return absl::OkStatus();
}

void Actor::ReleaseBlock(Regst* regst) {
  const RegstDesc& desc = regst->desc();
  if (desc.checked_block == nullptr) return;
  desc.checked_block->ReleaseIfHeld(desc.id, RegstBase(*regst),
                                    static_cast<size_t>(desc.layout.bytes));
}

void Actor::Reset() {
  state_ = State::kActing;
  started_ = false;
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
  // A feed's run ends when the caller closes it, not at a piece count.
  piece_end_ = feed_port_ != nullptr ? INT64_MAX : next_piece_ + *env_.pieces;
  cut_index_ = 0;
  next_cut_ = stateful_ && env_.cuts != nullptr && !env_.cuts->empty()
                  ? (*env_.cuts)[0]
                  : INT64_MAX;
  stats_ = TaskStats{};
  blocked_ = Blocked::kNone;
  last_async_end_ns_ = 0;
  if (env_.trace) {
    // Reserved so that recording never reallocates mid-run: every actor
    // acts at most once per piece (a feed's count is not known ahead).
    trace_.clear();
    if (feed_port_ == nullptr) trace_.reserve(*env_.pieces);
  }
}

void Actor::ProcessMsg(const ActorMsg& msg) {
  switch (msg.kind) {
    case ActorMsgKind::kRegstReady:
      AcceptReady(msg.slot, msg.regst, msg.piece_id);
      break;
    case ActorMsgKind::kRegstReturn: {
      Regst* regst = msg.regst;
      if (regst->ReadingDone()) PushFree(out_[msg.slot], regst);
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
          if (initial_pending_) ActInitial();
          break;
        case ActorCmd::kAsyncFailed:
          HandleAsyncFailures();
          break;
        default:  // kFed: Progress looks at the feed port; kWake
          break;
      }
      break;
  }
  Progress();
}

inline void Actor::AcceptReady(int16_t in_slot, Regst* regst,
                               int64_t piece_id) {
  if (state_ != State::kActing) {
    ReturnToProducer(regst);  // no more acts: hand it back unread
    return;
  }
  InSlot& slot = in_[in_slot];
  if (slot.ready.empty()) --blockers_;
  slot.ready.Push(ReadyRegst{regst, piece_id});
}

namespace {
// How deep direct calls may nest on this thread: each delivery or return
// can make the peer act and deliver in turn. Past this, messages go through
// the queue, which bounds the stack.
constexpr int kMaxDirectCallDepth = 64;
thread_local int direct_call_depth = 0;
}  // namespace

inline void Actor::Publish(Regst* regst) {
  const RegstDesc& desc = regst->desc();
  if (desc.consumers.empty()) {
    PushFree(out_[desc.producer_out_slot], regst);  // nobody reads it
    return;
  }
  regst->set_reading_cnt(static_cast<int32_t>(desc.consumers.size()));
  // Other threads first: a direct delivery below may run a long chain of
  // acts on this thread, and they should not wait for it to end.
  bool local = false;
  for (const RegstConsumer& consumer : desc.consumers) {
    if (consumer.thread->InThisThread()) {
      local = true;
    } else {
      Send(consumer.thread, ActorMsg::Ready(consumer.actor, consumer.in_slot,
                                            regst, regst->piece_id()));
    }
  }
  if (!local) return;
  for (const RegstConsumer& consumer : desc.consumers) {
    if (!consumer.thread->InThisThread()) continue;
    // A direct delivery must not overtake a message queued earlier for the
    // same input slot, hence the empty local queue: once anything is
    // queued, everything is until the thread has drained it.
    if (direct_call_depth < kMaxDirectCallDepth &&
        consumer.thread->local_queue_empty()) {
      ++direct_call_depth;
      consumer.actor_ptr->OnRegstReady(consumer.in_slot, regst);
      --direct_call_depth;
    } else {
      Send(consumer.thread, ActorMsg::Ready(consumer.actor, consumer.in_slot,
                                            regst, regst->piece_id()));
    }
  }
}

// Returns may arrive in any order (they only count readers down), so no
// queue check here.
inline void Actor::ReturnToProducer(Regst* regst) {
  const RegstDesc& desc = regst->desc();
  if (desc.producer_thread->InThisThread() &&
      direct_call_depth < kMaxDirectCallDepth) {
    ++direct_call_depth;
    desc.producer_actor->OnRegstReturned(desc.producer_out_slot, regst);
    --direct_call_depth;
    return;
  }
  Send(desc.producer_thread,
       ActorMsg::Return(desc.producer, desc.producer_out_slot, regst));
}

absl::Status Actor::KernelThrew(const char* what) {
  if (what == nullptr) {
    return absl::InternalError("kernel threw a non-std exception");
  }
  return absl::InternalError(absl::StrCat("kernel threw: ", what));
}

// The hot path: loops run over raw arrays with counts fixed at construction.
void Actor::Act() {
  InSlot* const in = in_.data();
  OutSlot* const out = out_.data();
  RegstBlobs** const inputs = ctx_.inputs_.data();
  RegstBlobs** const outputs = ctx_.outputs_.data();
  int64_t piece = next_piece_;
  if (!is_source_) {
    inputs[0] = in[0].ready.front().regst;
    piece = in[0].ready.front().piece_id;
    for (int i = 1; i < num_in_; ++i) {
      inputs[i] = in[i].ready.front().regst;
      if (__builtin_expect(in[i].ready.front().piece_id != piece, 0)) {
        FailOutOfStep(i, piece);
        return;
      }
    }
  }
  // A snapshot of the kernel's state before it acts on the cut's piece.
  if (__builtin_expect(piece >= next_cut_, 0)) ReachCut(piece);
  for (int o = 0; o < num_out_; ++o) {
    Regst* regst = out[o].free.Pop();
    if (out[o].free.empty()) ++blockers_;
    regst->set_piece_id(piece + lag_);
    if (__builtin_expect(resets_shapes_, 0)) regst->ResetShapes();
    outputs[o] = regst;
  }
  free_regsts_ -= num_out_;
  if (__builtin_expect(checks_blocks_, 0)) {
    absl::Status claimed = ClaimBlocks(outputs);
    if (!claimed.ok()) {
      for (int o = 0; o < num_out_; ++o) PushFree(out[o], AsRegst(outputs[o]));
      Fail(claimed, piece);
      return;
    }
  }
  ctx_.piece_id_ = piece;
  initial_piece_ = piece + lag_;
  if (async_ != nullptr) {
    LaunchAsync(inputs, outputs, piece);
    return;
  }

  absl::Status status = __builtin_expect(env_.trace | env_.timed, 0)
                            ? CallKernelTimed(piece)
                            : CallKernelMarked();
  // Its reads are over: registers sharing memory may be reused from here.
  if (__builtin_expect(status.ok() && checks_blocks_, 0)) {
    status = ReadBlocks(inputs);
  }
  if (__builtin_expect(!status.ok(), 0)) {
    for (int o = 0; o < num_out_; ++o) PushFree(out[o], AsRegst(outputs[o]));
    Fail(status, piece);
    return;  // MaybeEnd returns the inputs on the way to the zombie state
  }

  // Every state change comes before the first delivery: a delivery may run
  // other actors, and they may hand registers back to this one (busy, so
  // it only records them), which must find this act complete. Whatever
  // goes to another thread goes first, so that thread can work while this
  // one runs its own peers through direct calls: consumed registers back to
  // their producers, or, for an actor that feeds another thread, the
  // produced ones.
  next_piece_ += is_source_;
  CountAct();
  for (int i = 0; i < num_in_; ++i) {
    in[i].ready.Pop();
    if (in[i].ready.empty()) ++blockers_;
  }
  if (publishes_first_) {
    for (int o = 0; o < num_out_; ++o) Publish(AsRegst(outputs[o]));
    for (int i = 0; i < num_in_; ++i) ReturnToProducer(AsRegst(inputs[i]));
  } else {
    for (int i = 0; i < num_in_; ++i) ReturnToProducer(AsRegst(inputs[i]));
    for (int o = 0; o < num_out_; ++o) Publish(AsRegst(outputs[o]));
  }
}

void Actor::ReachCut(int64_t piece) {
  // Pieces come in order and every cut lies inside the run, so this act's
  // piece is the next cut's.
  while (next_cut_ <= piece) {
    if (next_cut_ == piece) env_.cut_listener->OnCut(id_, cut_index_);
    ++cut_index_;
    next_cut_ =
        cut_index_ < env_.cuts->size() ? (*env_.cuts)[cut_index_] : INT64_MAX;
  }
}

void Actor::ActInitial() {
  initial_pending_ = false;
  // A run that ended before it started (no pieces) needs no weights.
  if (state_ != State::kActing || blockers_ >= kStoppedActing) return;
  RegstBlobs** const outputs = ctx_.outputs_.data();
  for (int o = 0; o < num_out_; ++o) {
    if (out_[o].free.empty()) {
      // Every register is free at kStart (kReset found them so).
      Fail(absl::InternalError(
               absl::StrCat("regst_desc ", out_[o].desc->id,
                            ": no free register for the initial one")),
           initial_piece_);
      return;
    }
  }
  for (int o = 0; o < num_out_; ++o) {
    Regst* regst = out_[o].free.Pop();
    if (out_[o].free.empty()) ++blockers_;
    regst->set_piece_id(initial_piece_);
    if (resets_shapes_) regst->ResetShapes();
    outputs[o] = regst;
  }
  free_regsts_ -= num_out_;
  std::fill(ctx_.inputs_.begin(), ctx_.inputs_.end(), nullptr);
  ctx_.piece_id_ = initial_piece_;
  absl::Status status;
  try {
    status = kernel_->InitialOutput(&ctx_);
  } catch (const std::exception& e) {
    status = KernelThrew(e.what());
  } catch (...) {
    status = KernelThrew(nullptr);
  }
  if (!status.ok()) {
    for (int o = 0; o < num_out_; ++o) PushFree(out_[o], AsRegst(outputs[o]));
    Fail(absl::Status(status.code(),
                      absl::StrCat("initial register: ", status.message())),
         initial_piece_);
    return;
  }
  // Consumers on this thread may hand it straight back: they must find
  // this act complete and not re-enter it.
  const bool was_busy = busy_;
  busy_ = true;
  for (int o = 0; o < num_out_; ++o) Publish(AsRegst(outputs[o]));
  busy_ = was_busy;
}

void Actor::MaybeEnd() {
  if (state_ == State::kActing) {
    bool end = failed_ || env_.monitor->aborting();
    if (!end && is_source_) {
      end = started_ && (feed_port_ != nullptr ? feed_port_->Drained()
                                               : next_piece_ >= piece_end_);
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
  StopActing();
  if (async_ != nullptr) {
    // After the callbacks of every act, so EORD cannot overtake a register.
    absl::Status added = async_->poller()->AddCallback(
        async_->stream(), [this](absl::Status) { SendEords(); });
    if (!added.ok()) env_.monitor->ReportFailure(added);
  } else {
    SendEords();
  }
  for (InSlot& slot : in_) {
    if (slot.ready.empty()) continue;
    while (!slot.ready.empty()) ReturnToProducer(slot.ready.Pop().regst);
    ++blockers_;
  }
  if (fetch_port_ != nullptr) fetch_port_->End();
}

void Actor::SendEords() {
  for (const OutSlot& slot : out_) {
    for (const RegstConsumer& consumer : slot.desc->consumers) {
      Send(consumer.thread, ActorMsg::Eord(consumer.actor, consumer.in_slot));
    }
  }
}

void Actor::ReportLostMessage(const ActorMsg& msg) {
  env_.monitor->ReportFailure(absl::InternalError(
      absl::StrCat("task '", task_->name(), "': message to actor ", msg.dst,
                   " lost: its thread has stopped")));
}

// Producers emit pieces in order and the channels keep it, so inputs cannot
// drift apart unless the runtime itself is broken.
void Actor::FailOutOfStep(size_t input, int64_t piece) {
  Fail(absl::InternalError(absl::StrCat(
           "inputs out of step: regst_desc ", in_[0].desc->id, " holds piece ",
           piece, " but regst_desc ", in_[input].desc->id, " holds piece ",
           in_[input].ready.front().piece_id)),
       piece);
}

void Actor::StopWaiting() {
  if (blocked_ == Blocked::kNone) return;
  int64_t waited = SteadyNowNs() - blocked_since_ns_;
  (blocked_ == Blocked::kInput ? stats_.input_wait_ns
                               : stats_.output_wait_ns) += waited;
  blocked_ = Blocked::kNone;
}

// Boundary actors wait on their caller, which is in neither column.
void Actor::StartWaiting() {
  if (state_ != State::kActing || boundary_ || (is_source_ && !started_)) {
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

ActorSnapshot Actor::Snapshot() const {
  ActorSnapshot snapshot;
  snapshot.state = state_ == State::kActing   ? ActorSnapshot::State::kActing
                   : state_ == State::kZombie ? ActorSnapshot::State::kEnded
                                              : ActorSnapshot::State::kFinished;
  snapshot.is_source = is_source_;
  snapshot.started = started_;
  snapshot.acts = act_count();
  snapshot.next_piece = next_piece_;
  snapshot.piece_end = piece_end_;
  for (const KernelContext::Group& group : ctx_.input_groups_) {
    for (int i = group.begin; i < group.end; ++i) {
      snapshot.inputs.push_back({in_[i].desc->id, group.name,
                                 static_cast<int64_t>(in_[i].ready.size()),
                                 in_[i].ended});
    }
  }
  for (const KernelContext::Group& group : ctx_.output_groups_) {
    const OutSlot& slot = out_[group.begin];
    snapshot.outputs.push_back({slot.desc->id, group.name,
                                static_cast<int64_t>(slot.free.size()),
                                slot.desc->register_num});
  }
  return snapshot;
}

void Actor::Fail(const absl::Status& status, int64_t piece_id) {
  failed_ = true;
  StopActing();
  env_.monitor->ReportFailure(absl::Status(
      status.code(),
      absl::StrCat("task '", task_->name(), "' (task_id ", task_->task_id(),
                   ") failed at piece ", piece_id, ": ", status.message())));
}

}  // namespace actorflow
