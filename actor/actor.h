#ifndef ACTORFLOW_ACTOR_ACTOR_H_
#define ACTORFLOW_ACTOR_ACTOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "actor/act_context.h"
#include "actor/actor_msg.h"
#include "actor/feed_port.h"
#include "actor/fetch_port.h"
#include "actor/held_inputs.h"
#include "actor/register.h"
#include "actor/run_monitor.h"
#include "actorflow/act_span.h"
#include "actorflow/actor_stats.h"
#include "actorflow/kernel.h"
#include "actorflow/stream_key.h"
#include "base/inline_array.h"
#include "base/mutex.h"
#include "proto/plan.pb.h"
#include "thread/async_thread.h"
#include "thread/blocking_counter.h"
#include "thread/ring_queue.h"
#include "thread/thread.h"

namespace actorflow::internal {

// Everything an actor is built from, prepared when the plan is loaded.
struct ActorSpec {
  int32_t id = 0;  // dense actor index
  const TaskProto* task = nullptr;
  StreamKey stream;
  std::unique_ptr<Kernel> kernel;
  // Consumed descriptors by name (names sorted), each name's ids in order.
  std::vector<std::pair<std::string, std::vector<RegisterDesc*>>> inputs;
  // Produced descriptors by name (sorted).
  std::vector<std::pair<std::string, RegisterDesc*>> outputs;
  // Set when the task's thread runs kernels on an asynchronous stream.
  AsyncThread<ActorMsg>* async_thread = nullptr;
  // Set for the boundary tasks `feed` and `fetch` (see Session).
  FeedPort* feed_port = nullptr;
  FetchPort* fetch_port = nullptr;
  // Hand what consecutive acts make to the consumers together
  // (Actor::PublishDeferred; SessionOptions::batch_deliveries_from).
  bool batches_deliveries = false;
};

// Where an actor whose kernel has state hands it over at the cuts of a run
// (Session::Start's snapshots): called on the actor's thread, between its
// acts on pieces cut - 1 and cut, with the cut's index in the run's list.
class CutListener {
 public:
  virtual ~CutListener() = default;
  virtual void OnCut(int32_t actor, size_t cut) = 0;
};

// What the actors of a session share. A session runs its plan many times;
// each run starts with kReset to every actor (written by the session before
// it sends them, read by each actor when it handles its kReset).
struct ActorEnv {
  RunMonitor* monitor = nullptr;
  // Pieces each plain source makes in the run being reset.
  const int64_t* pieces = nullptr;
  // The pieces at which the run being reset takes snapshots (ascending,
  // inside the run), and who takes them.
  const std::vector<int64_t>* cuts = nullptr;
  CutListener* cut_listener = nullptr;
  // Counted down by each actor when it has handled kReset.
  BlockingCounter* resetting = nullptr;
  // Record an ActSpan per act (see trace()).
  bool trace = false;
  // Time every act and every wait (see stats() and kernel_since_ns()).
  bool timed = false;
  // Where inputs a kernel held go back (held_inputs.h); null: kernels
  // cannot hold their inputs.
  std::shared_ptr<ReturnRoute> returns;
};

// One task at run time. Lives on its stream's thread and is only touched
// there. It acts exactly when every input slot holds a ready register and
// every output slot a free one; after acting it sends each produced
// register to all its consumers and returns each consumed one to its
// producer.
//
// Life cycle of one run: kReset makes it kActing (with every register free
// and every input empty, as the previous run left them), kStart lets a
// source begin. kActing until no more pieces can come (a source has made
// its last piece; a feed is closed and drained; an input has ended and is
// empty; the run is aborting or this actor failed). Then it sends EORD on
// every output and becomes a zombie: it returns anything still arriving
// unread and waits until every input has ended and every register it
// produced has come back. Then it is finished and tells the RunMonitor,
// once. Piece ids keep counting from run to run.
//
// What an act is depends on the actor's mode, which is its type (MakeActor
// picks it from the spec; this class holds what they share: the slots,
// the life cycle, delivery and returns):
//   KernelActor   calls its kernel on this thread (kernel_actor.h);
//   StreamActor   queues its kernel on an asynchronous stream and sends
//                 what it made once the stream has run it (stream_actor.h);
//   SourceActor<KernelActor or StreamActor>
//                 has no inputs: makes the run's pieces, counted from kStart
//                 (source_actor.h);
//   FeedActor, FetchActor
//                 move registers between the plan and the caller instead of
//                 calling a kernel (boundary_actors.h).
class Actor {
 public:
  using RegisterRing = RingQueue<Register*, 2>;

  virtual ~Actor() = default;
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  void ProcessMsg(const ActorMsg& msg);

  // Direct calls from a peer on this actor's own thread, the same as a
  // kRegisterReturn or kRegisterReady message without the trip through the
  // queue. If this actor is busy (further up the stack, delivering what it just
  // made) the call only records the register: its Progress loop re-checks
  // before it returns, so it never re-enters itself.
  void OnRegisterReturned(int16_t out_slot, Register* reg) {
    if (reg->ReadingDone()) PushFree(out_[out_slot], reg);
    if (!busy_) Progress();
  }
  void OnRegisterReady(int16_t in_slot, Register* reg) {
    AcceptReady(in_slot, reg, reg->piece_id());
    if (!busy_) Progress();
  }
  // The same for several registers of one input slot, in piece order, and
  // one look at whether to act.
  void OnRegistersReady(int16_t in_slot, const RegisterRing& regs) {
    for (size_t i = 0; i < regs.size(); ++i) {
      AcceptReady(in_slot, regs.at(i), regs.at(i)->piece_id());
    }
    if (!busy_) Progress();
  }

  const TaskProto& task() const { return *task_; }
  const Kernel& kernel() const { return *kernel_; }

  // Checkpoints (Session::Checkpoint and Restore), on this actor's thread
  // between messages. The kernel, to save or restore its state:
  Kernel& mutable_kernel() { return *kernel_; }
  // What the kernel's SaveState and RestoreState get; `piece` is the first
  // piece after the cut.
  KernelStateContext StateContext(int64_t piece) const;
  // Waits until this actor's asynchronous stream has run everything queued
  // so far (nothing to wait for on a CPU stream), so that the kernel's
  // state is complete.
  virtual absl::Status DrainStream() { return absl::OkStatus(); }
  // A restored plan's next run starts at `piece`: sources make it first,
  // and an initial register is published as it.
  void StartAt(int64_t piece) {
    next_piece_ = piece;
    initial_piece_ = piece;
  }
  // Acts since the actor was built (a boundary actor counts the pieces it
  // moved). Any thread may read it at any time: the watchdog compares it
  // to see whether a run still makes progress.
  int64_t act_count() const {
    return act_count_.load(std::memory_order_relaxed);
  }
  // Any thread: 0 while no kernel call of this actor is under way on its
  // thread; during one, with ActorEnv::timed, when it began (SteadyNowNs),
  // else 1. (Acts on an asynchronous stream do not occupy the thread.)
  // Acquire: a session that abandons a thread stuck in a kernel (see
  // Session) thereby sees everything that thread did before the call.
  int64_t kernel_since_ns() const {
    return kernel_since_ns_.load(std::memory_order_acquire);
  }
  // With ActorEnv::timed, the current run's figures but `acts` (the
  // session counts those), up to the actor's last act. Any thread, at any
  // time (Session::Progress reads them during the run).
  TaskStats stats() const {
    TaskStats s;
    s.busy_ns = stats_.busy_ns.load(std::memory_order_relaxed);
    s.input_wait_ns = stats_.input_wait_ns.load(std::memory_order_relaxed);
    s.output_wait_ns = stats_.output_wait_ns.load(std::memory_order_relaxed);
    s.register_bytes =
        register_memory_ + held_bytes_.load(std::memory_order_relaxed);
    return s;
  }
  // On this actor's thread.
  ActorSnapshot Snapshot() const;
  // Stopping a run early at a piece agreed elsewhere (Session::HoldSources,
  // EndRunAt), on this actor's thread. A plain source acts no more until
  // EndSupplyAt and returns the first piece it has not begun; any other
  // actor returns -1.
  int64_t HoldSupply();
  // A plain source: this run ends before `piece` (or where the source is,
  // if past it), and the hold is released.
  void EndSupplyAt(int64_t piece);
  bool finished() const { return state_ == State::kFinished; }
  // One span per act when ActorEnv::trace is set, in act order; read it
  // after the actor's threads have stopped. Written by one thread: the
  // actor's (CPU stream) or its poller's (asynchronous stream).
  const std::vector<ActSpan>& trace() const { return trace_; }

 protected:
  // Built on its own thread (kConstruct), in state kFinished until the
  // first kReset. Takes the spec's kernel.
  Actor(ActorSpec& spec, ActorEnv env);

  enum class State { kActing, kZombie, kFinished };

  // A register delivered to an input slot, with the piece it holds (as its
  // message said; see ActorMsg).
  struct ReadyRegister {
    Register* reg = nullptr;
    int64_t piece_id = 0;
  };
  // Rings sized register_num, inline up to two (the common case) so that
  // the slots, with their rings, lie in the actor object itself: no
  // pointer to chase per act.
  struct InSlot {
    RegisterDesc* desc = nullptr;
    RingQueue<ReadyRegister, 2> ready;
    bool ended = false;  // EORD received
  };
  struct OutSlot {
    RegisterDesc* desc = nullptr;
    RegisterRing free;
    // Published by PublishDeferred, not yet handed to the consumers (at most
    // register_num, in piece order).
    RegisterRing deferred;
  };

  // --- What a mode defines ----------------------------------------------
  // Acts while it can. Called once per message (and per direct call), not
  // while this actor is busy.
  virtual void Drive() = 0;
  // kReset, after the shared state is reset; kStart, after `started_` is
  // set.
  virtual void OnReset() {}
  virtual void OnStart() {}
  // On entering the zombie state: sends EORD on every output once nothing
  // sent before it can be overtaken.
  virtual void EndOutputs() { SendEords(); }
  // kAsyncFailed.
  virtual void OnAsyncFailed() {}
  // Waits on the caller rather than on its inputs and outputs (neither
  // column of TaskStats).
  virtual bool WaitsOnCaller() const { return false; }

  // --- For the modes ------------------------------------------------------
  // Nothing blocks an act, and the run is not aborting. The gate (if any)
  // is asked apart, last: only when all else would let it act.
  bool Unblocked() const { return blockers_ == 0 && !env_.monitor->aborting(); }
  bool GateOpen() const { return gate_ == nullptr || gate_->Open(); }
  void CountAct() {
    act_count_.store(act_count_.load(std::memory_order_relaxed) + 1,
                     std::memory_order_relaxed);
  }
  void Publish(Register* reg);
  // Publish for an act that further acts may follow at once: the consumers
  // get the register when this actor stops acting, together with those its
  // next acts publish on `slot`, consumer by consumer (DeliverDeferred). A
  // consumer then acts on those pieces one after another while its state
  // is in cache, instead of once per sweep of the whole plan (which, in a
  // plan larger than the caches, evicts every actor between two of its
  // acts). Messages to another thread arrive there in the same order.
  void PublishDeferred(OutSlot& slot, Register* reg);
  static std::vector<InSlot> InSlotsOf(const ActorSpec& spec);
  static std::vector<OutSlot> OutSlotsOf(const ActorSpec& spec);

  // Hands every output slot's deferred registers over: first to consumers
  // on other threads, then to those on this one (see Publish).
  void DeliverDeferred();
  // Until nothing is deferred: deliveries may hand registers back and so
  // let this actor act again. Out of line: Progress stays small enough to
  // inline into the direct deliveries.
  __attribute__((noinline)) void DeliverDeferredAndDrive() {
    while (deferred_ != 0) {
      DeliverDeferred();
      Drive();
    }
  }
  void ReturnToProducer(Register* reg);
  void PushFree(OutSlot& slot, Register* reg) {
    if (__builtin_expect(checks_blocks_, 0)) ReleaseBlock(reg);
    if (slot.free.empty()) --blockers_;
    slot.free.Push(reg);
    ++free_registers_;
  }
  void Send(Thread<ActorMsg>* thread, const ActorMsg& msg) {
    if (__builtin_expect(!thread->TrySend(msg), 0)) ReportLostMessage(msg);
  }
  void SendReady(const RegisterConsumer& consumer, Register* reg) {
    Send(consumer.thread, ActorMsg::Ready(consumer.actor, consumer.in_slot, reg,
                                          reg->piece_id()));
  }
  void SendEords();
  void Fail(const absl::Status& status, int64_t piece_id);

  // Output slots whose register has dynamic blobs: their shapes go back to
  // the maximum before each act.
  bool resets_shapes_ = false;
  // An input or output shares memory and the session checks it
  // (RegisterDesc::checked_block): outputs are claimed before each act, inputs
  // counted read after it.
  bool checks_blocks_ = false;

  const int32_t id_;
  const TaskProto* const task_;
  std::unique_ptr<Kernel> kernel_;
  KernelGate* const gate_;  // kernel_'s, or null
  const ActorEnv env_;
  // ActorSpec::batches_deliveries.
  const bool batches_;
  // Registers waiting in the output slots' `deferred` rings.
  int deferred_ = 0;

  // Inside the actor object for the usual few slots (InlineArray).
  InlineArray<InSlot, 2> in_;
  InlineArray<OutSlot, 1> out_;
  int num_in_ = 0;
  int num_out_ = 0;
  // Input slots with nothing ready, plus output slots with no free register,
  // plus one while an initial register waits for kStart (ActInitial), plus
  // kStoppedActing once the actor failed or left kActing: it can act only
  // at zero, so Unblocked is one comparison and a flag.
  static constexpr int kStoppedActing = 1 << 24;
  int blockers_ = 0;
  int64_t free_registers_ = 0;
  int64_t total_registers_ = 0;
  size_t ended_in_ = 0;

  State state_ = State::kActing;
  bool started_ = false;  // kStart received
  // HoldSupply'd: counted in blockers_ too, so no source acts meanwhile.
  bool held_ = false;
  bool busy_ = false;
  // Set by a source or feed when it will make no more pieces this run.
  bool supply_ended_ = false;
  // Some consumer is on another thread: deliver outputs before returning
  // inputs (see KernelActor::Act).
  bool publishes_first_ = false;
  // 1 when this actor's registers are initial: what it makes from input
  // piece p is piece p + 1.
  const int64_t lag_;
  bool initial_pending_ = false;
  // The piece of the next run's initial register: the last one published
  // (the run's sources count on from there too).
  int64_t initial_piece_ = 0;
  int64_t next_piece_ = 0;             // sources and feeds
  int64_t piece_end_ = 0;              // plain sources: this run ends before it
  std::atomic<int64_t> act_count_{0};  // written on this actor's thread only
  std::atomic<int64_t> kernel_since_ns_{0};
  ActContext ctx_;
  std::vector<ActSpan> trace_;
  // ActorEnv::timed. busy_ns of an asynchronous stream's acts is written
  // by its poller, the other columns on this actor's thread: one writer
  // each, so an add is a relaxed load and store (no locked instruction),
  // and any thread may read them.
  struct Counters {
    std::atomic<int64_t> busy_ns{0};
    std::atomic<int64_t> input_wait_ns{0};
    std::atomic<int64_t> output_wait_ns{0};
  };
  static void AddTo(std::atomic<int64_t>* column, int64_t ns) {
    column->store(column->load(std::memory_order_relaxed) + ns,
                  std::memory_order_relaxed);
  }
  Counters stats_;
  // For TaskStats::register_bytes: the output registers' memory, and what
  // the kernel last said it keeps for them (not reset between runs: the
  // memory stays).
  int64_t register_memory_ = 0;
  std::atomic<int64_t> held_bytes_{0};

 private:
  // Inline in the direct deliveries: a call there cost some 6 instructions
  // an act.
  __attribute__((always_inline)) void Progress() {
    busy_ = true;
    if (__builtin_expect(env_.timed, 0)) StopWaiting();
    Drive();
    // Before MaybeEnd: EORD must not overtake them.
    if (__builtin_expect(deferred_ != 0, 0)) DeliverDeferredAndDrive();
    if (__builtin_expect(MayEnd(), 0)) MaybeEnd();
    if (__builtin_expect(env_.timed, 0)) StartWaiting();
    busy_ = false;
  }
  // Whether MaybeEnd has anything to decide: false on the hot path of an
  // actor that is acting and has seen no end of any kind yet.
  bool MayEnd() const {
    return blockers_ >= kStoppedActing || ended_in_ > 0 ||
           env_.monitor->aborting() || supply_ended_;
  }
  void MaybeEnd();
  void EnterZombie();
  void StopActing() {
    if (blockers_ < kStoppedActing) blockers_ += kStoppedActing;
  }
  // kReset: ready for another run.
  void Reset();
  void AcceptReady(int16_t in_slot, Register* reg, int64_t piece_id) {
    if (state_ != State::kActing) {
      ReturnToProducer(reg);  // no more acts: hand it back unread
      return;
    }
    InSlot& slot = in_[in_slot];
    if (slot.ready.empty()) --blockers_;
    slot.ready.Push(ReadyRegister{reg, piece_id});
  }
  // ActorEnv::timed: the time since the last Progress goes to the column of
  // what blocked the actor then; then what blocks it now is noted.
  enum class Blocked : uint8_t { kNone, kInput, kOutput };
  __attribute__((noinline)) void StopWaiting();
  __attribute__((noinline)) void StartWaiting();
  __attribute__((noinline, cold)) static void ReleaseBlock(Register* reg);
  __attribute__((noinline, cold)) void ReportLostMessage(const ActorMsg& msg);

  bool failed_ = false;
  Blocked blocked_ = Blocked::kNone;
  int64_t blocked_since_ns_ = 0;
};

// Publish and ReturnToProducer are defined here, inline, because every
// mode's act ends in them: the path each message takes.
namespace actor_internal {
// How deep direct calls may nest on this thread: each delivery or return
// can make the peer act and deliver in turn. Past this, messages go through
// the queue, which bounds the stack.
constexpr int kMaxDirectCallDepth = 64;
inline thread_local int direct_call_depth = 0;
// Whether a ready register may go to `consumer`, on this thread, by a direct
// call. It must not overtake a message queued earlier for the same input
// slot, hence the empty local queue: once anything is queued, everything is
// until the thread has drained it.
inline bool MayDeliverDirectly(const RegisterConsumer& consumer) {
  return direct_call_depth < kMaxDirectCallDepth &&
         consumer.thread->local_queue_empty();
}
}  // namespace actor_internal

inline void Actor::Publish(Register* reg) {
  const RegisterDesc& desc = reg->desc();
  if (desc.consumers.empty()) {
    PushFree(out_[desc.producer_out_slot], reg);  // nobody reads it
    return;
  }
  reg->set_reading_cnt(static_cast<int32_t>(desc.consumers.size()));
  // Other threads first: a direct delivery below may run a long chain of
  // acts on this thread, and they should not wait for it to end.
  bool local = false;
  for (const RegisterConsumer& consumer : desc.consumers) {
    if (consumer.thread->InThisThread()) {
      local = true;
    } else {
      SendReady(consumer, reg);
    }
  }
  if (!local) return;
  for (const RegisterConsumer& consumer : desc.consumers) {
    if (!consumer.thread->InThisThread()) continue;
    if (actor_internal::MayDeliverDirectly(consumer)) {
      ++actor_internal::direct_call_depth;
      consumer.actor_ptr->OnRegisterReady(consumer.in_slot, reg);
      --actor_internal::direct_call_depth;
    } else {
      SendReady(consumer, reg);
    }
  }
}

inline void Actor::PublishDeferred(OutSlot& slot, Register* reg) {
  const RegisterDesc& desc = *slot.desc;
  if (desc.consumers.empty()) {
    PushFree(slot, reg);
    return;
  }
  reg->set_reading_cnt(static_cast<int32_t>(desc.consumers.size()));
  slot.deferred.Push(reg);
  ++deferred_;
}

// Returns may arrive in any order (they only count readers down), so no
// queue check here.
inline void Actor::ReturnToProducer(Register* reg) {
  const RegisterDesc& desc = reg->desc();
  if (desc.producer_thread->InThisThread() &&
      actor_internal::direct_call_depth < actor_internal::kMaxDirectCallDepth) {
    ++actor_internal::direct_call_depth;
    desc.producer_actor->OnRegisterReturned(desc.producer_out_slot, reg);
    --actor_internal::direct_call_depth;
    return;
  }
  Send(desc.producer_thread,
       ActorMsg::Return(desc.producer, desc.producer_out_slot, reg));
}

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_ACTOR_H_
