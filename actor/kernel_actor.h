#ifndef ACTORFLOW_ACTOR_KERNEL_ACTOR_H_
#define ACTORFLOW_ACTOR_KERNEL_ACTOR_H_

#include <cstdint>
#include <exception>
#include <memory>

#include "absl/status/status.h"
#include "actor/actor.h"

namespace actorflow::internal {

// An actor that acts by calling its kernel on this thread, on the piece its
// inputs bring (SourceActor<KernelActor> counts its pieces instead). Also
// the base of StreamActor, which shares how an act takes its registers and
// differs only in where the kernel runs.
class KernelActor : public Actor, public InputHolder {
 public:
  // Takes the spec's kernel.
  KernelActor(ActorSpec& spec, ActorEnv env);

  // During the kernel's Forward (held_inputs.h).
  std::unique_ptr<HeldInputs> HoldInputs() override;

 protected:
  void Drive() override {
    while (Unblocked() && GateOpen()) {
      Act(in_[0].ready.front().piece_id);
    }
  }
  void OnReset() override;
  void OnStart() override {
    if (initial_pending_) ActInitial();
  }

  // One act on `piece`: false if it failed (the actor has stopped acting).
  bool Act(int64_t piece);
  // Act's first half, shared with StreamActor: takes the inputs' front
  // registers and a free register per output into ctx_, and passes the
  // run's cuts. False if it failed.
  __attribute__((always_inline)) bool TakeRegisters(int64_t piece);
  // The act's inputs off their slots' ready queues (both acts).
  void PopInputs() {
    for (int i = 0; i < num_in_; ++i) {
      in_[i].ready.Pop();
      if (in_[i].ready.empty()) ++blockers_;
    }
  }

  // A kernel that throws fails its task like one that returns an error.
  absl::Status CallKernel(KernelContext* ctx) {
    try {
      return kernel_->Forward(ctx);
    } catch (const std::exception& e) {
      return KernelThrew(e.what());
    } catch (...) {
      return KernelThrew(nullptr);
    }
  }

 private:
  // Act's last step where deliveries are batched (ActorSpec): returns the
  // inputs and publishes the outputs with PublishDeferred.
  __attribute__((noinline)) void HandOverBatched();
  // Each input of the act back to its producer, unless the kernel held
  // them: then the hold returns them.
  void ReturnInputs(RegisterBlobs** inputs) {
    if (__builtin_expect(inputs_held_, 0)) {
      inputs_held_ = false;
      return;
    }
    for (int i = 0; i < num_in_; ++i) ReturnToProducer(AsRegister(inputs[i]));
  }
  // CallKernel, marked as under way for kernel_since_ns().
  absl::Status CallKernelMarked() {
    kernel_since_ns_.store(1, std::memory_order_release);
    absl::Status status = CallKernel(&ctx_);
    kernel_since_ns_.store(0, std::memory_order_relaxed);
    return status;
  }
  // CallKernel, timed: its span (ActorEnv::trace) and busy time.
  __attribute__((noinline)) absl::Status CallKernelTimed(int64_t piece);
  // `what` is null for a non-std exception.
  __attribute__((noinline, cold)) static absl::Status KernelThrew(
      const char* what);
  // Fills and publishes the initial registers (see RegisterDescProto's
  // initial_register): once per run, on kStart.
  void ActInitial();
  __attribute__((noinline, cold)) absl::Status ClaimBlocks(
      RegisterBlobs** outputs);
  __attribute__((noinline, cold)) absl::Status ReadBlocks(
      RegisterBlobs** inputs);
  __attribute__((noinline, cold)) void FailOutOfStep(size_t input,
                                                     int64_t piece);
  __attribute__((noinline, cold)) void ReachCut(int64_t piece);

  // Actors whose kernel has state: the run's cuts not yet reached
  // (next_cut_ is INT64_MAX when there are none, so the check on every act
  // is one comparison).
  const bool stateful_;
  // The kernel holds this act's inputs (HoldInputs).
  bool inputs_held_ = false;
  size_t cut_index_ = 0;
  int64_t next_cut_ = INT64_MAX;
};

// The hot path: loops run over raw arrays with counts fixed at
// construction. Inline in both acts: a call here cost some 20 instructions
// of an act (pushes, pops and the act reloading what this loaded).
inline bool KernelActor::TakeRegisters(int64_t piece) {
  InSlot* const in = in_.data();
  OutSlot* const out = out_.data();
  RegisterBlobs** const inputs = ctx_.inputs();
  RegisterBlobs** const outputs = ctx_.outputs();
  for (int i = 0; i < num_in_; ++i) {
    inputs[i] = in[i].ready.front().reg;
    if (__builtin_expect(in[i].ready.front().piece_id != piece, 0)) {
      FailOutOfStep(i, piece);
      return false;
    }
  }
  // A snapshot of the kernel's state before it acts on the cut's piece.
  if (__builtin_expect(piece >= next_cut_, 0)) ReachCut(piece);
  for (int o = 0; o < num_out_; ++o) {
    Register* reg = out[o].free.Pop();
    if (out[o].free.empty()) ++blockers_;
    reg->set_piece_id(piece + lag_);
    if (__builtin_expect(resets_shapes_, 0)) reg->ResetShapes();
    outputs[o] = reg;
  }
  free_registers_ -= num_out_;
  if (__builtin_expect(checks_blocks_, 0)) {
    absl::Status claimed = ClaimBlocks(outputs);
    if (!claimed.ok()) {
      for (int o = 0; o < num_out_; ++o)
        PushFree(out[o], AsRegister(outputs[o]));
      Fail(claimed, piece);
      return false;
    }
  }
  ctx_.set_piece_id(piece);
  initial_piece_ = piece + lag_;
  return true;
}

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_KERNEL_ACTOR_H_
