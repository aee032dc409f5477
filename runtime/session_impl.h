#ifndef ACTORFLOW_RUNTIME_SESSION_IMPL_H_
#define ACTORFLOW_RUNTIME_SESSION_IMPL_H_

// The machinery behind Session (actorflow/session.h), which forwards every
// call here: the compiled plan, its registers, threads and actors, the run
// monitor and the checkpoint slots. Internal: nothing outside runtime/
// includes it.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "actor/actor.h"
#include "actor/actor_msg_bus.h"
#include "actor/run_monitor.h"
#include "actor/thread_actors.h"
#include "actorflow/actor_stats.h"
#include "actorflow/checkpoint.h"
#include "actorflow/checkpoint_info.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/kernel.h"
#include "actorflow/kernel_bindings.h"
#include "actorflow/run_trace.h"
#include "actorflow/session.h"
#include "actorflow/tensor.h"
#include "base/mutex.h"
#include "diagnosis/hang_report.h"
#include "memory/memory_recycler.h"
#include "runtime/piece_cost.h"
#include "thread/blocking_counter.h"
#include "thread/channel.h"
#include "thread/thread_mgr.h"

namespace actorflow::internal {

class SessionImpl final : public MsgHandler<ActorMsg>, public CutListener {
 public:
  static absl::StatusOr<std::unique_ptr<SessionImpl>> Create(
      Plan plan, SessionOptions options);
  ~SessionImpl() override;
  SessionImpl(const SessionImpl&) = delete;
  SessionImpl& operator=(const SessionImpl&) = delete;

  // Session's API, one for one: documented in actorflow/session.h, whose
  // defaults apply (Session always passes every argument).
  absl::StatusOr<RunStats> Run(int64_t pieces);
  absl::Status Start(int64_t pieces);
  absl::Status Start(int64_t pieces, std::vector<int64_t> cuts);
  absl::StatusOr<CheckpointData> TakeSnapshot(int64_t cut,
                                              absl::Duration timeout);
  absl::StatusOr<RunStats> Wait();
  bool running() const;
  RunProgress Progress() const;
  std::string DescribeWaits(const std::string& reason);
  absl::StatusOr<int64_t> HoldSources(absl::Duration timeout);
  absl::Status EndRunAt(int64_t piece);

  absl::Status Feed(absl::string_view name, const Tensor& tensor);
  absl::Status TryFeed(absl::string_view name, const Tensor& tensor);
  absl::Status CloseFeed(absl::string_view name);
  absl::Status CloseFeeds();
  absl::StatusOr<Tensor> Fetch(absl::string_view name);
  absl::StatusOr<FetchedTensor> FetchBorrowed(absl::string_view name);
  // FetchedTensor::TakeOver's: `reg`, held by the caller, gets other memory.
  absl::StatusOr<TakenTensor> TakeOver(Register* reg);

  absl::StatusOr<CheckpointData> Snapshot(absl::Duration timeout);
  absl::StatusOr<CheckpointInfo> Checkpoint(const std::string& root,
                                            const CheckpointOptions& options);
  absl::StatusOr<CheckpointInfo> Restore(const std::string& dir,
                                         const RestoreOptions& options);
  absl::Status RestoreFrom(const CheckpointData& data, const std::string& path,
                           const RestoreOptions& options);
  const std::optional<CheckpointInfo>& restored() const { return restored_; }
  int64_t next_piece() const;

  std::map<std::string, SinkSummary> Sinks() const;
  const RunTrace& trace() const { return trace_; }
  const CompiledPlan& compiled() const { return *compiled_; }
  const ThreadPlacement& threads() const { return placement_; }
  void Abort(absl::Status status);
  absl::Status status() const;
  bool left_threads_running() const { return abandoned_; }

  // The commands about the session as a whole (ThreadActors hands them
  // over on the actor's thread); every other message goes from the thread
  // straight to the actor.
  void Handle(const ActorMsg& msg) override;       // threads only
  void OnCut(int32_t actor, size_t cut) override;  // threads only

 private:
  struct Port;  // a feed or fetch task and its port
  SessionImpl(std::unique_ptr<CompiledPlan> compiled, SessionOptions options,
              UsableCpus cpus);
  friend class ::actorflow::FetchedTensor;  // the public class

  // Create's steps, in order (Build runs them):
  absl::Status Build();
  // Refuses a plan with feeds and other sources.
  absl::Status CheckSources() const;
  // A RegisterDesc per produced register, its registers allocated (or placed
  // in their shared block), and an ActorSpec per task with its outputs;
  // `devices` gets every GPU a register lives on.
  absl::Status AllocateRegisters(std::set<int>* devices);
  // Each task's inputs and its producers' consumer lists, the feed and
  // fetch ports, and kernel gates' wakers.
  void ConnectTasks();
  // A thread per stream (plain CPU streams beyond the CPUs free for them
  // share them), sized for every message that can be in flight; each register
  // knows its producer's and consumers' threads.
  absl::Status StartThreads();
  // Per actor, the key of the thread that runs its stream. With more than
  // one plain CPU stream, it first looks for CPUs busy elsewhere.
  std::vector<StreamKey> ThreadKeys();
  // The plan's CPU work per piece on the streams in `cpu_stream_index`
  // (stream -> its index), where every task there has an estimate
  // (runtime/piece_cost.h); nullopt otherwise.
  std::optional<PieceCost> EstimatePieceCost(
      const absl::flat_hash_map<StreamKey, int>& cpu_stream_index) const;
  // The run monitor, the per-actor bookkeeping, and every actor
  // constructed on its own thread.
  absl::Status ConstructActors();
  absl::Status StartLocked(int64_t pieces, std::vector<int64_t> cuts = {})
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Hands a fetched register back to its producer.
  void Release(Register* reg);
  void OnFailure(const absl::Status& status);
  absl::StatusOr<Port*> FindPort(absl::string_view name, bool feed);
  absl::Status FeedImpl(absl::string_view name, const Tensor& tensor,
                        bool block);
  static absl::Status TensorFits(const Port& port, const Tensor& tensor);
  absl::Status EnsureRunning();
  absl::Status SendCmd(int32_t actor, ActorCmd cmd);
  int64_t TotalActs() const;
  // Waits for the run to drain, within SessionOptions' limits; past one,
  // stops the run and returns the hang report.
  absl::Status WaitWithinLimits(int64_t run_start_ns);
  absl::Status StopHungRun(const std::string& reason);
  // Every actor's snapshot (those that answer within a second) and its
  // running kernel.
  HangFacts CollectHangFacts(const std::string& reason);
  // The threads (thread_keys_) with some actor inside a kernel call now:
  // one pass over the actors, for callers that ask of every actor.
  absl::flat_hash_set<StreamKey> ThreadsInKernels() const;
  // After a failure: wakes every actor so the run winds down, and waits
  // for it to drain; a kernel still running after cancel_grace has its
  // thread abandoned. Returns what it abandoned ("" if nothing).
  std::string CancelRun();
  // Checkpoints: whether every actor has acted equally often (how often).
  bool AtRest(int64_t* acts) const;
  // On actor a's thread: kSaveState or kRestoreState.
  void HandleState(int32_t a, bool save);
  void Construct(int32_t a);
  // Every actor's state, taken on its thread; Aborted when some actor had
  // acted past `acts` by then (the caller tries again).
  absl::StatusOr<CheckpointData> TakeStates(int64_t acts, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);
  // The names of the tasks whose kernels keep state.
  std::vector<std::string> StatefulTasks() const;
  const std::vector<TaskSignature>& Signature()
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(state_mu_);

  std::unique_ptr<CompiledPlan> compiled_;
  const SessionOptions options_;
  std::vector<std::unique_ptr<RegisterDesc>> descs_;
  // SessionOptions::check_memory_sharing: one per mem_block_id.
  absl::flat_hash_map<int64_t, std::unique_ptr<SharedBlock>> shared_blocks_;
  std::vector<ActorSpec> specs_;
  std::vector<StreamKey> streams_;      // per actor
  std::vector<StreamKey> thread_keys_;  // per actor: its thread's key
  StreamPoolSpec stream_pool_;          // the streams any thread may run
  ThreadPlacement placement_;
  std::vector<bool> async_actor_;
  std::vector<std::unique_ptr<Port>> ports_;
  // What fetched registers handed over (TakeOver) comes back to.
  std::shared_ptr<MemoryRecycler> recycler_ =
      std::make_shared<MemoryRecycler>();
  bool has_feeds_ = false;
  bool has_fetches_ = false;
  // Each thread's actors, owned by the table its messages go through (by
  // thread index); actors_[a] points into one. Slot a is written once, on
  // actor a's thread, before Create returns.
  std::vector<std::unique_ptr<ThreadActors>> thread_actors_;
  std::vector<ThreadActors*> table_of_actor_;
  std::vector<Actor*> actors_;
  std::unique_ptr<RunMonitor> monitor_;
  std::unique_ptr<ThreadMgr<ActorMsg>> threads_;
  std::unique_ptr<ActorMsgBus> bus_;
  BlockingCounter constructing_{0};
  BlockingCounter resetting_{0};
  ActorEnv env_;
  std::vector<int32_t> last_tasks_;  // whose outputs nobody reads
  // The hang report's snapshots: slot a is written on actor a's thread,
  // then taken_[a] set (release); the session reads slots whose flag it
  // sees set.
  std::vector<std::optional<ActorSnapshot>> snapshots_;
  std::unique_ptr<std::atomic<bool>[]> snapshot_taken_;
  BlockingCounter describing_{0};
  Mutex describe_mu_;  // one CollectHangFacts at a time
  // HoldSources: slot a is written on actor a's thread (HoldSupply's
  // answer), then holding_ counted down; hold_mu_ keeps one hold at a time.
  Mutex hold_mu_;
  std::vector<int64_t> held_at_;
  BlockingCounter holding_{0};
  // Checkpoints: slot a is written on actor a's thread, then stating_
  // counted down; read once the count is zero. state_mu_ keeps one
  // Snapshot or Restore at a time.
  struct StateSlot {
    KernelState state;
    const KernelState* restore = nullptr;  // kRestoreState: what to give
    int64_t piece = 0;
    int64_t acts = 0;
    int64_t save_ns = 0;  // spent in the kernel's SaveState
    absl::Status status;
  };
  // The longest time one thread spent in SaveState, over `slots`.
  double LongestPauseMs(const std::vector<StateSlot>& slots) const;
  std::vector<StateSlot> state_slots_;
  // The cuts of the run in progress (Start with cuts): written by Start
  // before the actors' kReset, read by them; per cut, a slot per actor,
  // written on its thread, then `pending` counted down.
  struct Cut {
    int64_t piece = 0;
    std::vector<StateSlot> slots;
    BlockingCounter pending{0};
    bool taken = false;
  };
  std::vector<int64_t> run_cuts_;
  std::vector<std::unique_ptr<Cut>> cuts_;
  BlockingCounter stating_{0};
  Mutex state_mu_;
  // A Snapshot gave up waiting for the actors' answers: the next one waits
  // for them before it reuses the slots.
  bool states_pending_ ABSL_GUARDED_BY(state_mu_) = false;
  std::vector<TaskSignature> signature_ ABSL_GUARDED_BY(state_mu_);
  // The piece a restore started the session at: written under state_mu_
  // before the actors are told, read with it or on their threads after.
  int64_t base_piece_ = 0;
  std::optional<CheckpointInfo> restored_;
  // Set when a thread stuck in a kernel was left running: the destructor
  // then frees nothing that thread could reach.
  bool abandoned_ = false;

  mutable Mutex mu_;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  bool started_once_ ABSL_GUARDED_BY(mu_) = false;
  // Also read by the actors at kReset, which StartLocked waits for.
  int64_t pieces_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t next_piece_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t run_start_ns_ ABSL_GUARDED_BY(mu_) = 0;
  // Per actor, at the run's start.
  std::vector<int64_t> acts_before_ ABSL_GUARDED_BY(mu_);
  // Written by Wait under mu_; trace() hands it out between runs, when no
  // other thread writes it.
  RunTrace trace_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_RUNTIME_SESSION_IMPL_H_
