#ifndef ACTORFLOW_ENGINE_ENGINE_H_
#define ACTORFLOW_ENGINE_ENGINE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "engine/context.h"
#include "engine/engine_options.h"
#include "engine/profiler.h"
#include "engine/stream_set.h"
#include "engine/var.h"
#include "thread/spin_mutex.h"

// The dependency engine (docs/ARCHITECTURE.md, section 6): an imperative API,
// with MXNet's names and semantics, that runs pushed functions as soon as the
// variables they read and write allow.
//
//   Engine* engine = Engine::Get();
//   VarHandle a = engine->NewVariable();
//   engine->PushSync([&](RunContext) { x = 1; }, Context::CPU(), {}, {a});
//   engine->PushSync([&](RunContext) { y = x; }, Context::CPU(), {a}, {});
//   absl::Status status = engine->WaitForAll();
namespace actorflow::engine {

class Engine;
class Opr;
struct BlockWaiter;
struct OprBlock;
struct BlockProfile;
using OprHandle = Opr*;

// Tells the engine that an asynchronous operation is done. Call it exactly
// once, from any thread, with an error if the operation failed. Copies share
// one completion; a second call is reported on stderr and ignored. If every
// copy is destroyed without a call, the operation completes with an error
// saying so, so a forgotten callback cannot hang WaitForAll.
class CallbackOnComplete {
 public:
  CallbackOnComplete(const CallbackOnComplete& other);
  CallbackOnComplete(CallbackOnComplete&& other) noexcept;
  CallbackOnComplete& operator=(const CallbackOnComplete&) = delete;
  CallbackOnComplete& operator=(CallbackOnComplete&&) = delete;
  // Inline: a moved-from copy (std::function moves its argument twice on
  // the way in) releases nothing.
  ~CallbackOnComplete() {
    if (block_ != nullptr) Release();
  }

  void operator()(absl::Status status = absl::OkStatus()) const;

 private:
  friend class Engine;
  // Takes over two of the block's references, counted when it was made
  // (OprBlock::kRunRefs): Engine::Execute's copies.
  CallbackOnComplete(Engine* engine, OprBlock* block);
  // Completes unless already completed; true if this call completed it.
  bool CompleteIfPending(absl::Status status) const;
  // The destructor's work for a live copy.
  void Release();
  // The rare endings, out of line so that the usual ones stay small: the
  // last copy dropped uncalled; a failure's status named after the
  // operation; a second call.
  __attribute__((noinline, cold)) void CompleteDropped();
  __attribute__((noinline, cold)) absl::Status Annotated(
      absl::Status status) const;
  __attribute__((noinline, cold)) void ReportRepeatedCall() const;

  Engine* engine_;
  OprBlock* block_;  // null once moved from
};

using AsyncFn = std::function<void(RunContext, CallbackOnComplete)>;
using SyncFn = std::function<void(RunContext)>;

class Dispatcher;

class Engine {
 public:
  // An engine of `type` with thread counts from the environment (see
  // EngineOptions::FromEnv; a bad value is reported on stderr and its
  // default used).
  static std::unique_ptr<Engine> Create(EngineType type);
  static std::unique_ptr<Engine> Create(EngineType type,
                                        const EngineOptions& options);
  // The process-wide engine, created on first use with the type named by
  // $ACTORFLOW_ENGINE_TYPE (default ThreadedEnginePerDevice). It lives until
  // the process exits.
  static Engine* Get();

  // Finishes every pushed operation, joins the workers and frees the
  // variables not deleted yet.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  EngineType type() const { return type_; }

  // `name` labels it in profiles (default "var <id>").
  VarHandle NewVariable(std::string name = "");

  // An operator that can be pushed many times. A variable listed twice, or
  // as both read and written, counts once, as written.
  OprHandle NewOperator(AsyncFn fn, const std::vector<VarHandle>& const_vars,
                        const std::vector<VarHandle>& mutable_vars,
                        FnProperty prop = FnProperty::kNormal,
                        std::string name = "");
  // Frees the operator once every push of it has completed.
  void DeleteOperator(OprHandle op);
  // Higher priorities run first in the CPU priority pool (kCPUPrioritized);
  // elsewhere the order is FIFO among ready operations. `profiling`
  // profiles this push even while the engine's profiling is off (MXNet's
  // per-push flag).
  void Push(OprHandle op, Context exec_ctx, int priority = 0,
            bool profiling = false);

  void PushAsync(AsyncFn fn, Context exec_ctx,
                 const std::vector<VarHandle>& const_vars,
                 const std::vector<VarHandle>& mutable_vars,
                 FnProperty prop = FnProperty::kNormal, int priority = 0,
                 std::string name = "", bool profiling = false);
  // `fn` returns when the work is done; throwing fails the operation. On a
  // GPU context the worker's stream is synchronized before completion.
  void PushSync(SyncFn fn, Context exec_ctx,
                const std::vector<VarHandle>& const_vars,
                const std::vector<VarHandle>& mutable_vars,
                FnProperty prop = FnProperty::kNormal, int priority = 0,
                std::string name = "", bool profiling = false);

  // Runs `delete_fn` after every operation pushed on `var` before this call,
  // then frees the variable. Pushing on `var` afterwards is an error.
  void DeleteVariable(SyncFn delete_fn, Context exec_ctx, VarHandle var);

  // Waits for every operation that writes `var` and was pushed before this
  // call (not for earlier reads: a read pushed now would not either).
  // Returns the error carried by `var` (an operation that wrote it failed,
  // or was skipped because something it depended on failed) and clears it:
  // each error is reported once. Called inside an operation that reads
  // `var`, it returns at once (every earlier write is done; a later one
  // waits for the caller). Called inside an operation that writes `var`,
  // it returns FailedPrecondition instead of waiting for itself.
  absl::Status WaitForVar(VarHandle var);
  // Waits until nothing is pending. Returns the first error since the last
  // WaitForAll that returned one, and clears it.
  absl::Status WaitForAll();

  // Refuses new pushes: each one completes at once, unrun, with an error on
  // the variables it writes (and in WaitForAll). Pending operations still
  // run; the destructor waits for them.
  void NotifyShutdown();

  // Operations pushed and not yet completed. A worker adds up its own
  // completions and counts them when it runs out of work, so while workers
  // are busy this may still include some that completed; it reads zero
  // once everything pushed is done and the workers are idle (as after
  // WaitForAll).
  int64_t pending() const { return pending_.load(std::memory_order_acquire); }

  // --- The profiler (docs/engine.md, "Profiling"). Off, it costs one
  // predictable branch per push; on (EngineOptions::profiling,
  // $ACTORFLOW_PROFILER_AUTOSTART=1, SetProfiling, or per push) it records
  // every operation pushed while on once it completes: name, worker, when
  // it was queued, ready, started and finished, the variables it read and
  // wrote and how long it waited for each. ---
  void SetProfiling(bool on) {
    profiling_.store(on, std::memory_order_relaxed);
  }
  bool profiling() const { return profiling_.load(std::memory_order_relaxed); }
  // The completed operations' records, in push order.
  std::vector<OprRecord> ProfileRecords() const { return profiler_.Records(); }
  // Writes them as a Chrome trace (chrome://tracing, Perfetto): one row per
  // worker, arrows from an operation to those it let run. Call it once the
  // operations of interest completed (after WaitForAll).
  absl::Status DumpProfile(const std::string& path) const;
  // Per name: count, total, mean and max time running, and time waiting.
  std::string ProfileTable() const { return profiler_.Table(); }
  void ClearProfile() { profiler_.Clear(); }

  // Runs a ready operation on the calling thread, on `streams`' stream for
  // its device: the workers' entry.
  void Execute(OprBlock* block, StreamSet* streams);
  // pending_ - count: the workers' other entry, for the completions a
  // worker counted itself (DeferFinish, engine/worker_pool.h). The step to zero
  // is taken under all_mu_ so that a waiter that sees zero can destroy the
  // engine safely.
  void FinishMany(int64_t count);

 private:
  friend class CallbackOnComplete;
  Engine(EngineType type, const EngineOptions& options);

  // Profiled GPU operations' device time (BlockProfile::device_*).
  void StartDeviceTiming(BlockProfile* profile, const RunContext& rctx);
  int64_t FinishDeviceTiming(BlockProfile* profile);  // ns, or -1

  // Push's body; takes over one reference to `opr` from the caller.
  // `waiter`, if given, is notified when the block completes.
  void PushBlock(Opr* opr, Context ctx, int priority, BlockWaiter* waiter,
                 bool profiling = false);
  // Nanoseconds since the engine was created (profiles' clock).
  int64_t ProfileNow() const;
  // A profiled block's record, once it completed.
  void RecordProfile(OprBlock* block, const absl::Status& status);
  // Notes, in the profiled ones among granted[from..], that `var` was
  // granted to them by `by`'s completion. A profiled block granted here was
  // counted in profiled_in_flight_ before it entered the variable's queue,
  // under the variable's lock that the caller just released: while none is
  // in flight, nothing to note.
  void NoteGrants(const OprBlock* by, const Var* var, const GrantList& granted,
                  size_t from) {
    if (profiled_in_flight_.load(std::memory_order_relaxed) != 0) {
      NoteProfiledGrants(by, var, granted, from);
    }
  }
  void NoteProfiledGrants(const OprBlock* by, const Var* var,
                          const GrantList& granted, size_t from);
  // Why a push cannot be accepted (shutdown, bad context, deleted
  // variable), or OK.
  absl::Status CheckPush(const Opr& opr, const Context& ctx);
  // CheckPush's answer where its quick tests found something to look at.
  __attribute__((noinline)) absl::Status WhyRefused(const Opr& opr,
                                                    const Context& ctx);
  // Puts `block` in the queues of its variables; it becomes ready once all
  // of them granted it.
  void Submit(OprBlock* block);
  // All dependencies granted: run inline (kAsync, NaiveEngine, or skipped on
  // an inherited error), else hand to the dispatcher.
  void OnReady(OprBlock* block);
  // Runs `block` on this thread; nested calls are queued and run by the
  // outermost one, so chains of inline operations do not grow the stack.
  void RunInline(OprBlock* block);
  void RunOneInline(OprBlock* block);
  // Exactly once per block, whether it ran, failed or was skipped.
  void Complete(OprBlock* block, absl::Status status);
  // Completes a block that will never run (refused, or skipped for an
  // inherited error): drops the references counted for running it.
  void CompleteUnrun(OprBlock* block, absl::Status status);
  // The error of the first failed variable `block` depends on, or OK.
  absl::Status InheritedError(const OprBlock& block);
  // Remembers `status` for WaitForAll and, with `mark_vars`, on the
  // variables `opr` writes, so their later users are skipped.
  void RecordError(const Opr& opr, const absl::Status& status, bool mark_vars);
  void FreeDeletedVars(const Opr& opr);
  // One completion: pending_ - 1 (deferred on a worker, see
  // DeferFinish).
  void FinishOne();
  static void ReleaseBlock(OprBlock* block);

  const EngineType type_;
  std::unique_ptr<Dispatcher> dispatcher_;
  bool runs_on_caller_ = false;  // dispatcher_->runs_on_caller(), read per push
  StreamSet inline_streams_;     // kAsync and NaiveEngine operations on a GPU
  // Serializes Submit: every push enters all its variables' queues as one
  // step, so two pushers can never order two operations differently on two
  // variables (which would deadlock both).
  // The fields below are grouped by who writes them, a cache line per
  // group: a field every completion writes (pending_) beside one every push
  // writes (next_seq_, submit_mu_) or one every operation reads
  // (vars_with_error_) would move that line between cores on every
  // operation.
  //
  // Written by pushers.
  alignas(64) internal::SpinMutex submit_mu_;
  uint64_t next_seq_ ABSL_GUARDED_BY(submit_mu_) = 0;
  // Written by every completion (and push).
  alignas(64) std::atomic<int64_t> pending_{0};
  // Read by every push or completion, rarely written.
  alignas(64) std::atomic<bool> shutting_down_{false};
  // Variables whose error is set: while zero, readiness skips the per-variable
  // error check.
  std::atomic<int64_t> vars_with_error_{0};
  std::atomic<bool> profiling_{false};
  // Profiled blocks pushed and not completed: while zero, a completion
  // skips noting whom it granted (NoteGrants).
  std::atomic<int64_t> profiled_in_flight_{0};
  const int64_t created_ns_;
  alignas(64) std::atomic<uint64_t> next_var_id_{1};
  Profiler profiler_;

  internal::Mutex vars_mu_;
  absl::flat_hash_set<Var*> live_vars_ ABSL_GUARDED_BY(vars_mu_);

  internal::Mutex all_mu_ ABSL_ACQUIRED_AFTER(vars_mu_);
  internal::CondVar all_done_;
  std::atomic<int> all_waiters_{0};
  absl::Status first_error_ ABSL_GUARDED_BY(all_mu_);
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_ENGINE_H_
