#include "actor/kernel_actor.h"

#include <algorithm>
#include <exception>
#include <string>

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

KernelActor::KernelActor(ActorSpec& spec, ActorEnv env)
    : Actor(spec, env), stateful_(kernel_ != nullptr && kernel_->has_state()) {
  if (env_.returns != nullptr) ctx_.mutable_rep().holder = this;
}

std::unique_ptr<HeldInputs> KernelActor::HoldInputs() {
  if (inputs_held_) return nullptr;
  RegisterBlobs** const inputs = ctx_.inputs();
  for (int i = 0; i < num_in_; ++i) {
    const std::shared_ptr<SyncedMemory>& memory =
        AsRegister(inputs[i])->memory_ptr();
    if (memory == nullptr || !memory->owns_cpu_data() ||
        memory->head() == SyncedMemory::HEAD_AT_GPU) {
      return nullptr;
    }
  }
  auto held = std::make_unique<HeldInputs>(env_.returns);
  for (int i = 0; i < num_in_; ++i) held->Add(AsRegister(inputs[i]));
  inputs_held_ = true;
  return held;
}

void KernelActor::OnReset() {
  cut_index_ = 0;
  next_cut_ = stateful_ && env_.cuts != nullptr && !env_.cuts->empty()
                  ? (*env_.cuts)[0]
                  : INT64_MAX;
  // Reserved so that recording never reallocates mid-run: every actor acts
  // at most once per piece.
  if (env_.trace) trace_.reserve(*env_.pieces);
}

namespace {
absl::Status SharingBroken(const std::string& what) {
  return absl::InternalError(absl::StrCat(
      what, " (memory sharing that the plan's shape does not allow)"));
}
}  // namespace

absl::Status KernelActor::ClaimBlocks(RegisterBlobs** outputs) {
  for (int o = 0; o < num_out_; ++o) {
    const RegisterDesc& desc = AsRegister(outputs[o])->desc();
    if (desc.checked_block == nullptr) continue;
    // Claimed ones stay claimed until PushFree releases them.
    std::string broken = desc.checked_block->Claim(
        desc.id, static_cast<int>(desc.consumers.size()));
    if (!broken.empty()) return SharingBroken(broken);
  }
  return absl::OkStatus();
}

absl::Status KernelActor::ReadBlocks(RegisterBlobs** inputs) {
  for (int i = 0; i < num_in_; ++i) {
    const RegisterDesc& desc = AsRegister(inputs[i])->desc();
    if (desc.checked_block == nullptr) continue;
    std::string broken =
        desc.checked_block->ReaderDone(desc.id, AsRegister(inputs[i])->base(),
                                       static_cast<size_t>(desc.layout.bytes));
    if (!broken.empty()) return SharingBroken(broken);
  }
  return absl::OkStatus();
}

absl::Status KernelActor::KernelThrew(const char* what) {
  if (what == nullptr) {
    return absl::InternalError("kernel threw a non-std exception");
  }
  return absl::InternalError(absl::StrCat("kernel threw: ", what));
}

absl::Status KernelActor::CallKernelTimed(int64_t piece) {
  int64_t begin = SteadyNowNs();
  kernel_since_ns_.store(begin, std::memory_order_release);
  absl::Status status = CallKernel(&ctx_);
  int64_t end = SteadyNowNs();
  kernel_since_ns_.store(0, std::memory_order_relaxed);
  AddTo(&stats_.busy_ns, end - begin);
  if (env_.trace) trace_.push_back({piece, begin, end});
  return status;
}

bool KernelActor::Act(int64_t piece) {
  if (!TakeRegisters(piece)) return false;
  OutSlot* const out = out_.data();
  RegisterBlobs** const inputs = ctx_.inputs();
  RegisterBlobs** const outputs = ctx_.outputs();
  absl::Status status = __builtin_expect(env_.trace | env_.timed, 0)
                            ? CallKernelTimed(piece)
                            : CallKernelMarked();
  // Its reads are over: registers sharing memory may be reused from here.
  if (__builtin_expect(status.ok() && checks_blocks_, 0)) {
    status = ReadBlocks(inputs);
  }
  if (__builtin_expect(!status.ok(), 0)) {
    for (int o = 0; o < num_out_; ++o) PushFree(out[o], AsRegister(outputs[o]));
    if (inputs_held_) {
      // The hold returns them: they must not be returned here too.
      inputs_held_ = false;
      PopInputs();
    }
    Fail(status, piece);
    return false;  // MaybeEnd returns the inputs on the way to the zombie state
  }

  // Every state change comes before the first delivery: a delivery may run
  // other actors, and they may hand registers back to this one (busy, so
  // it only records them), which must find this act complete. Whatever
  // goes to another thread goes first, so that thread can work while this
  // one runs its own peers through direct calls: consumed registers back to
  // their producers, or, for an actor that feeds another thread, the
  // produced ones. (A source counts its piece once this returns: nothing
  // a delivery runs reads it.)
  CountAct();
  PopInputs();
  if (__builtin_expect(batches_, 0)) {
    HandOverBatched();
    return true;
  }
  if (publishes_first_) {
    for (int o = 0; o < num_out_; ++o) Publish(AsRegister(outputs[o]));
    ReturnInputs(inputs);
  } else {
    ReturnInputs(inputs);
    for (int o = 0; o < num_out_; ++o) Publish(AsRegister(outputs[o]));
  }
  return true;
}

void KernelActor::HandOverBatched() {
  RegisterBlobs** const inputs = ctx_.inputs();
  RegisterBlobs** const outputs = ctx_.outputs();
  // Whether another act can follow at once; if so, this act's outputs wait
  // for it, and the last act of the streak hands them all over.
  const bool acts_again = blockers_ == 0;
  if (!publishes_first_) ReturnInputs(inputs);
  for (int o = 0; o < num_out_; ++o)
    PublishDeferred(out_[o], AsRegister(outputs[o]));
  if (!acts_again) DeliverDeferred();
  if (publishes_first_) ReturnInputs(inputs);
}

void KernelActor::ReachCut(int64_t piece) {
  // Pieces come in order and every cut lies inside the run, so this act's
  // piece is the next cut's.
  while (next_cut_ <= piece) {
    if (next_cut_ == piece) env_.cut_listener->OnCut(id_, cut_index_);
    ++cut_index_;
    next_cut_ =
        cut_index_ < env_.cuts->size() ? (*env_.cuts)[cut_index_] : INT64_MAX;
  }
}

void KernelActor::ActInitial() {
  initial_pending_ = false;
  --blockers_;  // Reset's: acts may follow this one
  // A run that ended before it started (no pieces) needs no weights.
  if (state_ != State::kActing || blockers_ >= kStoppedActing) return;
  RegisterBlobs** const outputs = ctx_.outputs();
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
    Register* reg = out_[o].free.Pop();
    if (out_[o].free.empty()) ++blockers_;
    reg->set_piece_id(initial_piece_);
    if (resets_shapes_) reg->ResetShapes();
    outputs[o] = reg;
  }
  free_registers_ -= num_out_;
  std::fill(ctx_.inputs(), ctx_.inputs() + num_in_, nullptr);
  ctx_.set_piece_id(initial_piece_);
  absl::Status status;
  try {
    status = kernel_->InitialOutput(&ctx_);
  } catch (const std::exception& e) {
    status = KernelThrew(e.what());
  } catch (...) {
    status = KernelThrew(nullptr);
  }
  if (!status.ok()) {
    for (int o = 0; o < num_out_; ++o)
      PushFree(out_[o], AsRegister(outputs[o]));
    Fail(absl::Status(status.code(),
                      absl::StrCat("initial register: ", status.message())),
         initial_piece_);
    return;
  }
  // Consumers on this thread may hand it straight back: they must find
  // this act complete and not re-enter it.
  const bool was_busy = busy_;
  busy_ = true;
  for (int o = 0; o < num_out_; ++o) Publish(AsRegister(outputs[o]));
  busy_ = was_busy;
}

// Producers emit pieces in order and the channels keep it, so inputs cannot
// drift apart unless the runtime itself is broken.
void KernelActor::FailOutOfStep(size_t input, int64_t piece) {
  Fail(absl::InternalError(absl::StrCat(
           "inputs out of step: regst_desc ", in_[0].desc->id, " holds piece ",
           piece, " but regst_desc ", in_[input].desc->id, " holds piece ",
           in_[input].ready.front().piece_id)),
       piece);
}

}  // namespace actorflow::internal
