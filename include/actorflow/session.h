#ifndef ACTORFLOW_SESSION_H_
#define ACTORFLOW_SESSION_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "actorflow/actor_stats.h"
#include "actorflow/channel_options.h"
#include "actorflow/checkpoint.h"
#include "actorflow/checkpoint_info.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/cuda_api.h"
#include "actorflow/kernel.h"
#include "actorflow/kernel_bindings.h"
#include "actorflow/proto/plan.pb.h"
#include "actorflow/register_limit.h"
#include "actorflow/run_trace.h"
#include "actorflow/tensor.h"
#include "actorflow/usable_cpus.h"
#include "actorflow/version.h"

// Running a plan from a program: Session (compile once, run many times,
// feed and fetch), the options it is made with, and what a run reports.
//
// Ownership: a Session owns its threads, registers and kernels; everything
// it starts is joined before its destructor returns. A FetchedTensor
// borrows a register and must be released (or destroyed) before its
// session. Thread safety and failure handling are stated on the Session
// class below; errors are absl::Status naming the task, register or option.
namespace actorflow {

// The runtime's, outside the versioned namespace.
namespace internal {
class Register;
class SessionImpl;
}  // namespace internal

ACTORFLOW_NAMESPACE_BEGIN

// Where plain CPU streams run when they outnumber their threads
// (SessionOptions::share_cpu_threads).
enum class StreamSharing {
  kAuto,
  // Each thread runs a fixed block of consecutive streams.
  kConsecutive,
  // A stream with messages waits in a queue until one of the threads is
  // free; one thread at a time runs it, so its tasks still act one at a
  // time and in order. Messages between streams then always cross a queue.
  kAnyThread,
};

struct SessionOptions {
  // How long a waiting thread may spin (see ChannelOptions); its
  // usable_cpus is set from `usable_cpus` below.
  ChannelOptions channel;
  // The CPUs the session may keep busy at once (actorflow/usable_cpus.h): 0
  // takes the process's figure (the affinity mask, fewer under a cgroup CPU
  // quota, or the ACTORFLOW_CPUS environment variable). A waiting thread
  // spins only while no more threads than this are awake, and parks at
  // once otherwise; see `share_cpu_threads`.
  int usable_cpus = 0;
  // When the plan's plain CPU streams outnumber UsableCpus::SharedThreads()
  // (the usable CPUs less those busy elsewhere as the session is made),
  // they share that many threads, consecutive streams in order of first
  // appearance together, balanced by task count: every task still acts in
  // piece order, and tasks of one stream never at once, but tasks of
  // streams that share a thread no longer run at the same time. False: a
  // thread per stream.
  bool share_cpu_threads = true;
  // How streams that share threads are placed: kAuto takes consecutive
  // blocks unless the blocks come out uneven (the largest task count on a
  // thread over 1.2x the mean: three equal streams on two threads), and
  // then lets any of the threads run any of those streams. kAuto also puts
  // them all on one thread when every act's time can be told in advance
  // and handing pieces between threads would cost more than the overlap
  // saves (ThreadPlacement::estimated_piece_ns; docs/sessions.md).
  StreamSharing stream_sharing = StreamSharing::kAuto;
  // On a thread that runs at least this many actors, a task that can act
  // several times in a row hands what those acts made to each consumer
  // together, after the last of them, so that the consumer acts on those
  // pieces one after another while its state is in cache (in a plan larger
  // than the caches, one act at a time through the whole plan evicts every
  // actor between two of its acts). Results and the order of each task's
  // acts are the same either way. On a thread of a few actors, all in
  // cache, delivering each register as it is made is cheaper. 1: always;
  // INT_MAX: never.
  int batch_deliveries_from = 64;
  // Record when every act of each run ran (Session::trace()).
  bool trace = false;
  // Time every act and every wait, for RunStats::tasks. Costs a few clock
  // reads per act.
  bool stats = false;
  // Limits on one run, enforced while Wait (or Run) waits; zero: none. A
  // run that takes longer than `timeout`, or in which no task acts for
  // `stall` (a kernel that runs that long counts as no act), is stopped:
  // Wait returns DeadlineExceeded whose message is the hang report (see
  // diagnosis/hang_report.h), and the session is failed from then on.
  absl::Duration timeout = absl::ZeroDuration();
  absl::Duration stall = absl::ZeroDuration();
  // Once a run is cancelled (a limit, or the session destroyed), how long a
  // kernel already running may take to return. A thread whose kernel has
  // not returned by then is left running, unjoined (the only thread the
  // session ever leaves), and what it may still touch is never freed.
  absl::Duration cancel_grace = absl::Seconds(2);
  // Kernels for this session only (see KernelBindings).
  KernelBindings kernels;
  // Kernel libraries built outside actorflow (actorflow/kernel_library.h,
  // examples/plugin), loaded by Create before it compiles the plan. Their
  // kernels join the process-wide registry and stay: later sessions see
  // them too, and loading one twice is a no-op. One that fails to load
  // fails Create, naming it.
  std::vector<std::string> kernel_libraries;
  // Which CUDA devices are usable (tests pass their own).
  DeviceProbe probe = cuda::DeviceAvailable;
  // Create refuses a plan whose registers need more, before allocating
  // anything (see CompileOptions).
  int64_t max_register_bytes = kDefaultMaxRegisterBytes;
  // A checkpoint to start from (Session::Restore): a checkpoint directory,
  // or a root holding several (the newest is taken). Empty: none.
  std::string restore_from;
  // Checks the plan's memory sharing (RegisterDescProto.mem_block_id) as it
  // runs: a register written while another of its block holds data fails
  // the run, naming both, and a register's bytes are poisoned (0xFF) as
  // soon as its readers are done, so a read after that gives NaN rather
  // than the right answer. For tests and for doubting a hand-written
  // plan; costs a branch per act and a memset per free register.
  bool check_memory_sharing = false;
  // Called once, with the session's first failure (a kernel's error, a
  // limit, Abort), on the thread that reports it, before the run winds
  // down. It must not call back into the session. Multi-machine jobs use it
  // to tell the other processes at once.
  std::function<void(const absl::Status&)> on_failure;
};

// What one run did. Without SessionOptions::stats returning it allocates
// nothing.
struct RunStats {
  int64_t first_piece = 0;  // the id of the run's first piece
  int64_t pieces = 0;       // pieces each source made (a feed: pieces fed)
  int64_t acts = 0;         // acts of every actor in this run
  double wall_ms = 0;       // from starting the sources to the last finish
  // With SessionOptions::stats: per task name, where its time went.
  std::map<std::string, TaskStats> tasks;
};

// Where a session runs its streams (Session::threads()).
struct ThreadPlacement {
  UsableCpus cpus;      // what the session may use, and where that came from
  int streams = 0;      // distinct streams of the plan
  int threads = 0;      // threads running them
  int cpu_streams = 0;  // plain CPU streams (not GPU, not host-async)
  int cpu_threads = 0;  // the threads those share
  // How the plain CPU streams share cpu_threads: "none" (a thread each),
  // "consecutive" or "any_thread" (StreamSharing).
  std::string sharing = "none";
  // Threads (or, on a pool, streams) that batch deliveries: those running
  // at least SessionOptions::batch_deliveries_from actors.
  int batching_threads = 0;
  // Set when the CPU streams share one thread because their acts are too
  // short to pay for handing pieces between threads (every task a
  // built-in kernel whose time follows its bytes; docs/sessions.md): the
  // plan's estimated CPU work per piece, in ns. 0 otherwise.
  int64_t estimated_piece_ns = 0;
  // Every stream's thread, named after the first stream it runs:
  // {"m0/cpu0/s2": "m0/cpu0/s1"} when stream 2 shares stream 1's thread;
  // "any" for a stream that any of the cpu_threads runs.
  std::map<std::string, std::string> thread_of_stream;
};

// How Session::Restore matches a checkpoint to the session's plan.
struct RestoreOptions {
  // The caller has checked that the checkpoint fits this plan (a pipeline
  // compares its own definition, which leaves out its worker threads), so
  // the plans are not compared: each task that keeps state must find its
  // state (by task name, with the same op_type), and the checkpoint may
  // hold state for no other task. By default the plans must
  // be the same.
  bool caller_checks_plan = false;
};

// A run in progress as seen from outside it (Session::Progress).
struct RunProgress {
  bool running = false;
  // Pieces that every last task (one whose outputs nobody reads) has
  // taken in this run.
  int64_t pieces_done = 0;
  int64_t pieces_total = -1;  // -1: unknown (a plan with feeds)
  int64_t acts = 0;           // every actor's, in this run
  double elapsed_ms = 0;
  // With SessionOptions::stats: per task name, where its time went so far
  // in this run (each task's figures up to its last act).
  std::map<std::string, TaskStats> tasks;
};

// A fetched piece borrowed from the plan: its register stays out of the
// plan (holding back its producer, as any reader does) until Release or
// destruction. Must not outlive its session.
class FetchedTensor {
 public:
  FetchedTensor() = default;
  FetchedTensor(FetchedTensor&& other) noexcept;
  FetchedTensor& operator=(FetchedTensor&& other) noexcept;
  ~FetchedTensor() { Release(); }

  int64_t piece_id() const;
  // The fetched blob, read-only, valid until Release.
  ConstTensorView view() const;
  void Release();
  // Hands the blob's memory over to the caller without a copy and releases
  // the register, which gets memory the session recycles from earlier
  // take-overs (or new memory) in its place. FailedPrecondition, with the
  // register still held, where the memory cannot be handed over: shared
  // with other registers, read by another task too, pinned or on a device.
  // Copy from view() then.
  absl::StatusOr<TakenTensor> TakeOver();

 private:
  friend class ::actorflow::internal::SessionImpl;
  FetchedTensor(internal::SessionImpl* session, internal::Register* reg)
      : session_(session), register_(reg) {}
  internal::SessionImpl* session_ = nullptr;
  internal::Register* register_ = nullptr;
};

// A plan compiled once and run many times. Create checks the plan, infers
// its shapes, creates and Inits every kernel (once), allocates every
// register and starts the threads; each run then only resets the actors and
// starts the sources. Nothing is allocated per run in steady state.
//
// Runs. Run(n) makes n more pieces from every source and returns when the
// plan has drained. Piece ids keep counting across runs: the second Run(n)
// makes pieces n..2n-1, so sources see new ids and sinks (such as
// `checksum`) see one stream of pieces. Sink summaries count every piece
// since Create.
//
// Feeding and fetching. A `feed` task is a source whose pieces come from
// Feed; a `fetch` task is a sink whose pieces go to Fetch. A plan with feeds
// has no other sources; it runs for as long as the caller feeds it: the
// first Feed (or CloseFeed) starts a run, CloseFeeds ends it once what was
// fed has drained, Wait returns its stats, and the next Feed starts the
// next run. A plan with fetches but no feeds runs with Start(n), Fetch until
// OutOfRange, then Wait. Every edge stays bounded: Feed blocks while every
// register of its feed is in use, and a fetch's producer stops when the
// caller holds all its registers. Feed and Fetch may be called from
// different threads at once; Start, Wait, Run and the destructor from one.
//
// Failures. A kernel's error stops the run; it surfaces at the caller's
// next Feed, Fetch, Run, Start or Wait (a blocked one wakes), naming the
// task and piece, and from then on every call returns that same error.
// Destroying a session with a run in progress cancels it: sources stop,
// every actor is woken to end, everything in flight drains, every thread is
// joined and every register freed (borrowed FetchedTensors must be released
// first). The one exception is a kernel that has not returned
// SessionOptions::cancel_grace after the cancel: its thread is left
// running, and the session says so on stderr.
//
// Hangs. With SessionOptions::timeout or stall, Wait and Run stop a run
// that passes either limit and return the hang report: what every task
// waits for and who holds it, which kernels run and for how long, and any
// cycle of waits.
class Session final {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Create(
      Plan plan, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Start(pieces) then Wait(). Plans with feeds or fetches are refused
  // (nobody would feed or fetch while Run waits).
  absl::StatusOr<RunStats> Run(int64_t pieces);
  // Begins a run: every plain source makes `pieces` pieces (< 0: the plan's
  // total_piece_num). Refused while a run is in progress.
  absl::Status Start(int64_t pieces = -1);
  // The same, taking a snapshot at each of `cuts` (ascending pieces strictly
  // inside the run) as the run goes by, with no pause: every task whose
  // kernel has state saves it on its own thread just before it acts on
  // the cut's piece, while the others go on. TakeSnapshot collects each.
  absl::Status Start(int64_t pieces, std::vector<int64_t> cuts);
  // The snapshot at `cut` of the run in progress (or just ended), once
  // every task with state has passed it: at most `timeout`, then
  // DeadlineExceeded. Each one once; from the thread that calls Start.
  absl::StatusOr<CheckpointData> TakeSnapshot(
      int64_t cut, absl::Duration timeout = absl::Seconds(60));
  // Waits for the run in progress to drain and returns what it did.
  absl::StatusOr<RunStats> Wait();
  bool running() const;
  // Any thread, any time: how far the current (or last) run has got.
  RunProgress Progress() const;
  // Any thread: what every task of the run in progress waits for now and
  // who holds it (the report SessionOptions::stall prints, headed by
  // `reason` unless it is empty), the run undisturbed. Up to a second when a
  // kernel is running.
  std::string DescribeWaits(const std::string& reason);

  // Ending a run early at a piece agreed with others (a multi-machine job
  // preempted: docs/multi_process.md). Any thread; a plan without feeds.
  // HoldSources: every plain source of the run in progress finishes the
  // piece it is making and makes no other until EndRunAt; the rest of the
  // plan goes on draining. Returns the first piece that no source has
  // begun (between runs: next_piece()). DeadlineExceeded when a source's
  // kernel has not returned within `timeout` (it stays held).
  absl::StatusOr<int64_t> HoldSources(
      absl::Duration timeout = absl::Seconds(10));
  // The run in progress ends before `piece`, which must be at least what
  // HoldSources returned: every source makes the pieces below it, the run
  // drains, and Wait reports those pieces. Releases the hold. Refused when
  // a snapshot cut of the run (Start) lies at or past `piece`. Between
  // runs: nothing to end.
  absl::Status EndRunAt(int64_t piece);

  // Copies `tensor` into a free register of feed task `name` and sends it
  // on as the feed's next piece. The tensor must have the blob's data type
  // and rank, and its shape (a dynamic blob: no dimension above it).
  absl::Status Feed(absl::string_view name, const Tensor& tensor);
  // Feed without blocking: Unavailable (and nothing fed) while every
  // register of the feed is in use.
  absl::Status TryFeed(absl::string_view name, const Tensor& tensor);
  // No more pieces from feed `name` in this run.
  absl::Status CloseFeed(absl::string_view name);
  absl::Status CloseFeeds();
  // The next piece of fetch task `name`, in piece order, copied out (its
  // register goes back to the plan at once). OutOfRange when the run has
  // ended and every piece was fetched.
  absl::StatusOr<Tensor> Fetch(absl::string_view name);
  // The same, borrowed: no copy, the register held until released.
  absl::StatusOr<FetchedTensor> FetchBorrowed(absl::string_view name);

  // --- checkpoints (docs/checkpoints.md; actorflow/checkpoint.h) ---
  // The plan's state at a cut, in memory: every task after the same piece,
  // with the piece counters and the plan's signature. Between runs that is
  // at once; during a run, once every task has acted on every piece started
  // so far (a plan with feeds: what was fed has gone through; plain
  // sources: the run's end). Waits at most `timeout` for that, then
  // DeadlineExceeded, the run undisturbed. Any thread; the state is taken on
  // each task's thread between two pieces.
  absl::StatusOr<CheckpointData> Snapshot(
      absl::Duration timeout = absl::Seconds(60));
  // Snapshot, written as a new checkpoint under `root` (see
  // actorflow/checkpoint.h: atomic, checksummed, pruned to keep_last).
  absl::StatusOr<CheckpointInfo> Checkpoint(
      const std::string& root, const CheckpointOptions& options = {});
  // Before the first run: every task's state from the checkpoint in `dir`
  // (a checkpoint, or the newest under a root), and the piece counters, so
  // that the next run makes the pieces the checkpointed session would have
  // made next. Refuses a checkpoint of another plan, naming what differs;
  // missing, truncated or corrupt files name the file. A restore that fails
  // part way fails the session.
  absl::StatusOr<CheckpointInfo> Restore(const std::string& dir,
                                         const RestoreOptions& options = {});
  // The same from a checkpoint in memory; `path` names it in errors.
  absl::Status RestoreFrom(const CheckpointData& data,
                           const std::string& path = "(in memory)",
                           const RestoreOptions& options = {});
  // What SessionOptions::restore_from (or the last Restore) restored.
  const std::optional<CheckpointInfo>& restored() const;
  // The first piece of the next run.
  int64_t next_piece() const;

  // Between runs: per `checksum`-like task, what its kernel reports.
  std::map<std::string, SinkSummary> Sinks() const;
  // Between runs, with SessionOptions::trace: the last run's acts.
  const RunTrace& trace() const;
  // The plan as compiled: tasks, shapes, registers.
  const CompiledPlan& compiled() const;
  // The CPUs the session found it may use, and its streams' threads.
  const ThreadPlacement& threads() const;
  // Any thread: stops the run in progress (or the next one) with `status`,
  // as a kernel's error would; from then on the session is failed. Only the
  // first failure counts.
  void Abort(absl::Status status);
  // The failure that stopped the session; OK while it is usable.
  absl::Status status() const;
  // Whether a thread stuck in a kernel was left running (see
  // SessionOptions::cancel_grace). A program that then exits should do so
  // without running static destructors under that thread (std::_Exit).
  bool left_threads_running() const;

 private:
  explicit Session(std::unique_ptr<internal::SessionImpl> impl);
  std::unique_ptr<internal::SessionImpl> impl_;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_SESSION_H_
