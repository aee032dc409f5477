#include "engine/engine.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/cuda_api.h"
#include "actorflow/usable_cpus.h"
#include "engine/dispatcher.h"
#include "engine/opr.h"
#include "engine/worker_pool.h"
#include "thread/cpu_relax.h"
#include "thread/spin_wait.h"

namespace actorflow::engine {

namespace {

// How long WaitForAll polls once nothing is queued, before it sleeps, when
// a CPU is free for it.
constexpr int64_t kWaitSpinNs = 100'000;

// Blocks made ready on this thread while it is already running one inline
// (Engine::RunInline), with their engines: run by the outermost call, in
// order, from `next`. Cleared (capacity kept) when that call returns.
struct InlineQueue {
  int depth = 0;
  std::vector<std::pair<Engine*, OprBlock*>> blocks;
  size_t next = 0;
};
thread_local InlineQueue t_inline;
// The operation whose function runs on this thread (innermost), if any.
thread_local const Opr* t_running_opr = nullptr;
// Its profile, if profiled (so PushSync can mark where its device work ends).
thread_local BlockProfile* t_running_profile = nullptr;

// Marks the end of a profiled GPU operation's device work on `stream`, once.
void MarkDeviceEnd(BlockProfile* profile, void* stream) {
  if (profile == nullptr || profile->device_start == nullptr ||
      profile->device_end != nullptr || stream == nullptr) {
    return;
  }
  absl::StatusOr<cuda::EventHandle> end =
      cuda::TimingEventCreate(profile->device);
  if (!end.ok()) return;
  if (!cuda::EventRecord(*end, stream).ok()) {
    cuda::EventDestroy(*end);
    return;
  }
  profile->device_end = *end;
}

std::string OprName(const Opr& opr) {
  return opr.name().empty() ? std::string("(unnamed)") : opr.name();
}

int64_t SteadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

// ---------------------------------------------------------------------------
// CallbackOnComplete

CallbackOnComplete::CallbackOnComplete(Engine* engine, OprBlock* block)
    : engine_(engine), block_(block) {}

CallbackOnComplete::CallbackOnComplete(const CallbackOnComplete& other)
    : engine_(other.engine_), block_(other.block_) {
  if (block_ != nullptr) block_->refs.fetch_add(2, std::memory_order_relaxed);
}

CallbackOnComplete::CallbackOnComplete(CallbackOnComplete&& other) noexcept
    : engine_(other.engine_), block_(other.block_) {
  other.block_ = nullptr;
}

void CallbackOnComplete::Release() {
  // The last copy (usually Execute's own, once the function returned) need
  // not write the count: nobody without a copy can make one. Otherwise only
  // the count may be read: once it is decremented, another copy's owner
  // may free the block.
  if (block_->refs.load(std::memory_order_acquire) != 2 &&
      block_->refs.fetch_sub(2, std::memory_order_acq_rel) != 2) {
    return;
  }
  // The last copy: whoever completed the block did so through a copy
  // released before this one, so `completed` is seen if it was set.
  if (!block_->completed.load(std::memory_order_acquire)) CompleteDropped();
  Engine::ReleaseBlock(block_);
}

void CallbackOnComplete::CompleteDropped() {
  // No copy is left and completion is still pending: nobody else can reach
  // the block, and nobody will call the callback.
  block_->completed.store(true, std::memory_order_relaxed);
  engine_->Complete(
      block_, absl::InternalError(absl::StrCat(
                  "operation '", OprName(*block_->opr),
                  "' dropped its completion callback without calling it")));
}

// Inline (only this file calls it): every completion goes through it.
inline bool CallbackOnComplete::CompleteIfPending(absl::Status status) const {
  if (block_->completed.exchange(true, std::memory_order_acq_rel)) {
    return false;
  }
  engine_->Complete(block_, std::move(status));
  return true;
}

void CallbackOnComplete::operator()(absl::Status status) const {
  if (!status.ok() && block_ != nullptr) status = Annotated(std::move(status));
  if (block_ == nullptr || !CompleteIfPending(std::move(status))) {
    ReportRepeatedCall();
  }
}

absl::Status CallbackOnComplete::Annotated(absl::Status status) const {
  return absl::Status(status.code(),
                      absl::StrCat("operation '", OprName(*block_->opr),
                                   "' failed: ", status.message()));
}

void CallbackOnComplete::ReportRepeatedCall() const {
  std::fprintf(stderr,
               "actorflow engine: completion callback of operation '%s' "
               "called more than once; ignored\n",
               block_ ? OprName(*block_->opr).c_str() : "(moved from)");
}

// ---------------------------------------------------------------------------
// Creation

Engine::Engine(EngineType type, const EngineOptions& options)
    : type_(type), profiling_(options.profiling), created_ns_(SteadyNs()) {
  switch (type) {
    case EngineType::kNaive:
      dispatcher_ = MakeNaiveDispatcher();
      break;
    case EngineType::kThreadedPooled:
      dispatcher_ = MakePooledDispatcher(this, options);
      break;
    case EngineType::kThreadedPerDevice:
      dispatcher_ = MakePerDeviceDispatcher(this, options);
      break;
  }
  runs_on_caller_ = dispatcher_->runs_on_caller();
}

std::unique_ptr<Engine> Engine::Create(EngineType type,
                                       const EngineOptions& options) {
  return std::unique_ptr<Engine>(new Engine(type, options));
}

std::unique_ptr<Engine> Engine::Create(EngineType type) {
  absl::StatusOr<EngineOptions> options = EngineOptions::FromEnv();
  if (!options.ok()) {
    std::fprintf(stderr, "actorflow engine: %s; using the default counts\n",
                 std::string(options.status().message()).c_str());
    return Create(type, EngineOptions());
  }
  return Create(type, *options);
}

Engine* Engine::Get() {
  static const std::unique_ptr<Engine> engine = [] {
    EngineType type = EngineType::kThreadedPerDevice;
    if (const char* name = std::getenv("ACTORFLOW_ENGINE_TYPE")) {
      absl::StatusOr<EngineType> parsed = ParseEngineType(name);
      if (parsed.ok()) {
        type = *parsed;
      } else {
        std::fprintf(stderr,
                     "actorflow engine: $ACTORFLOW_ENGINE_TYPE: %s; using "
                     "ThreadedEnginePerDevice\n",
                     std::string(parsed.status().message()).c_str());
      }
    }
    return Create(type);
  }();
  return engine.get();
}

Engine::~Engine() {
  {
    internal::MutexLock lock(&all_mu_);
    while (pending_.load() != 0) all_done_.Wait(&all_mu_);
  }
  dispatcher_.reset();  // joins the workers, now idle
  for (Var* var : live_vars_) delete var;
}

// ---------------------------------------------------------------------------
// Pushing

VarHandle Engine::NewVariable(std::string name) {
  Var* var = new Var(next_var_id_.fetch_add(1, std::memory_order_relaxed),
                     std::move(name));
  internal::MutexLock lock(&vars_mu_);
  live_vars_.insert(var);
  return var;
}

OprHandle Engine::NewOperator(AsyncFn fn,
                              const std::vector<VarHandle>& const_vars,
                              const std::vector<VarHandle>& mutable_vars,
                              FnProperty prop, std::string name) {
  return new Opr(std::move(fn), const_vars, mutable_vars, prop,
                 std::move(name));
}

void Engine::DeleteOperator(OprHandle op) { op->Unref(); }

void Engine::Push(OprHandle op, Context exec_ctx, int priority,
                  bool profiling) {
  op->Ref();  // the block's; the user keeps theirs
  PushBlock(op, exec_ctx, priority, nullptr, profiling);
}

void Engine::PushAsync(AsyncFn fn, Context exec_ctx,
                       const std::vector<VarHandle>& const_vars,
                       const std::vector<VarHandle>& mutable_vars,
                       FnProperty prop, int priority, std::string name,
                       bool profiling) {
  Opr* opr =
      new Opr(std::move(fn), const_vars, mutable_vars, prop, std::move(name));
  PushBlock(opr, exec_ctx, priority, nullptr, profiling);
}

void Engine::PushSync(SyncFn fn, Context exec_ctx,
                      const std::vector<VarHandle>& const_vars,
                      const std::vector<VarHandle>& mutable_vars,
                      FnProperty prop, int priority, std::string name,
                      bool profiling) {
  PushAsync(
      [fn = std::move(fn)](RunContext rctx, CallbackOnComplete on_complete) {
        fn(rctx);
        // Device work the function queued must be done before dependents
        // run.
        if (rctx.stream != nullptr) {
          MarkDeviceEnd(t_running_profile, rctx.stream);
          on_complete(cuda::StreamSynchronize(rctx.ctx.dev_id, rctx.stream));
        } else {
          on_complete();
        }
      },
      exec_ctx, const_vars, mutable_vars, prop, priority, std::move(name),
      profiling);
}

void Engine::DeleteVariable(SyncFn delete_fn, Context exec_ctx, VarHandle var) {
  {
    // Under vars_mu_, so that a variable being freed is not touched.
    internal::MutexLock lock(&vars_mu_);
    if (!live_vars_.contains(var) || var->deleting_.exchange(true)) {
      internal::MutexLock lock(&all_mu_);
      if (first_error_.ok()) {
        first_error_ = absl::FailedPreconditionError(
            "DeleteVariable called twice on one variable; the second call was "
            "ignored");
      }
      return;
    }
  }
  Opr* opr = new Opr(
      [fn = std::move(delete_fn)](RunContext rctx, CallbackOnComplete done) {
        if (fn) fn(rctx);
        done();
      },
      {}, {var}, FnProperty::kDeleteVar, "DeleteVariable");
  opr->internal = true;
  PushBlock(opr, exec_ctx, 0, nullptr);
}

absl::Status Engine::CheckPush(const Opr& opr, const Context& ctx) {
  // The usual push (a CPU context, live variables, not shutting down)
  // passes these tests; why one fails is found and worded out of line.
  bool suspect =
      ctx.dev_id < 0 || ctx.dev_id >= kMaxEngineDevices || ctx.is_gpu();
  if (!opr.internal) {
    suspect |= shutting_down_.load(std::memory_order_acquire);
    for (VarHandle var : opr.vars()) {
      suspect |= var->deleting_.load(std::memory_order_acquire);
    }
  }
  return suspect ? WhyRefused(opr, ctx) : absl::OkStatus();
}

absl::Status Engine::WhyRefused(const Opr& opr, const Context& ctx) {
  if (ctx.dev_id < 0 || ctx.dev_id >= kMaxEngineDevices) {
    return absl::InvalidArgumentError(
        absl::StrCat("operation '", OprName(opr), "' asks for ", ctx.ToString(),
                     ": device indices go from 0 to ", kMaxEngineDevices - 1));
  }
  if (ctx.is_gpu()) {
    absl::Status available = cuda::DeviceAvailable(ctx.dev_id);
    if (!available.ok()) {
      return absl::Status(
          available.code(),
          absl::StrCat("operation '", OprName(opr), "' asks for ",
                       ctx.ToString(), ": ", available.message()));
    }
  }
  if (opr.internal) return absl::OkStatus();
  if (shutting_down_.load(std::memory_order_acquire)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "engine is shutting down: operation '", OprName(opr), "' was not run"));
  }
  for (VarHandle var : opr.vars()) {
    if (var->deleting_.load(std::memory_order_acquire)) {
      return absl::FailedPreconditionError(
          absl::StrCat("operation '", OprName(opr),
                       "' uses a variable already passed to DeleteVariable"));
    }
  }
  return absl::OkStatus();
}

void Engine::PushBlock(Opr* opr, Context ctx, int priority, BlockWaiter* waiter,
                       bool profiling) {
  pending_.fetch_add(1, std::memory_order_relaxed);
  absl::Status refused = CheckPush(*opr, ctx);
  if (!refused.ok() && opr->internal) {
    // DeleteVariable and WaitForVar must still pass through the queues (the
    // variable is freed, or waited for, after its earlier users): run them
    // on the CPU instead of on the context they cannot have.
    RecordError(*opr, refused, /*mark_vars=*/false);
    ctx = Context::CPU();
    refused = absl::OkStatus();
  }
  auto* block = new OprBlock(opr, ctx, priority);
  block->waiter = waiter;
  // Off, this is the profiler's one branch per push.
  if ((profiling || profiling_.load(std::memory_order_relaxed)) &&
      !opr->internal) {
    block->profile = std::make_unique<BlockProfile>();
    profiled_in_flight_.fetch_add(1, std::memory_order_relaxed);
    block->profile->queued_ns = ProfileNow();
    // A variable that queues it overwrites its entry when it grants it
    // (Complete); the others granted it at the push.
    block->profile->granted_ns.assign(opr->vars().size(),
                                      block->profile->queued_ns);
    block->profile->granted_after.assign(opr->vars().size(), -1);
  }
  if (!refused.ok()) {
    {
      internal::SpinMutexLock lock(&submit_mu_);
      block->seq = next_seq_++;
    }
    CompleteUnrun(block, std::move(refused));
    return;
  }
  // NaiveEngine's push returns once its operation is done, unless it is
  // pushed from inside a running operation, which may hold what it needs.
  // (Its waiter is made only then: a mutex and a condition variable per
  // push cost the threaded engines measurably.)
  if (runs_on_caller_ && waiter == nullptr && t_inline.depth == 0) {
    BlockWaiter naive_waiter;
    block->waiter = &naive_waiter;
    Submit(block);
    naive_waiter.Wait();
    return;
  }
  Submit(block);
}

void Engine::Submit(OprBlock* block) {
  const Opr& opr = *block->opr;
  int granted = 0;
  {
    internal::SpinMutexLock lock(&submit_mu_);
    block->seq = next_seq_++;
    block->submitted = true;
    absl::Span<const VarHandle> vars = opr.vars();
    for (size_t i = 0; i < vars.size(); ++i) {
      granted += opr.writes(i) ? vars[i]->AppendWrite(block)
                               : vars[i]->AppendRead(block);
    }
  }

  if (block->wait.fetch_sub(granted + 1, std::memory_order_acq_rel) ==
      granted + 1) {
    OnReady(block);
  }
}

// ---------------------------------------------------------------------------
// Running

void Engine::OnReady(OprBlock* block) {
  if (block->profile) block->profile->ready_ns = ProfileNow();
  if (block->prop == FnProperty::kAsync || runs_on_caller_ ||
      (vars_with_error_.load(std::memory_order_acquire) > 0 &&
       !block->internal)) {
    RunInline(block);
  } else {
    dispatcher_->Dispatch(block);
  }
}

void Engine::RunInline(OprBlock* block) {
  InlineQueue& queue = t_inline;
  if (queue.depth > 0) {
    queue.blocks.emplace_back(this, block);
    return;
  }
  ++queue.depth;
  RunOneInline(block);
  while (queue.next < queue.blocks.size()) {
    auto [engine, next] = queue.blocks[queue.next++];
    engine->RunOneInline(next);
  }
  queue.blocks.clear();
  queue.next = 0;
  --queue.depth;
}

void Engine::RunOneInline(OprBlock* block) {
  const Opr& opr = *block->opr;
  if (!opr.internal) {
    absl::Status inherited = InheritedError(*block);
    if (!inherited.ok()) {
      CompleteUnrun(block, std::move(inherited));
      return;
    }
  }
  bool worker_op =
      opr.prop != FnProperty::kAsync && !runs_on_caller_ && !opr.internal;
  if (worker_op) {
    // Ran inline only to check errors; it has none, so it goes to a worker.
    dispatcher_->Dispatch(block);
    return;
  }
  Execute(block, &inline_streams_);
}

void Engine::Execute(OprBlock* block, StreamSet* streams) {
  // Both take references counted in advance (OprBlock::kRunRefs): `keep`
  // holds the block until this function returns, `call` is the function's.
  CallbackOnComplete keep(this, block);
  CallbackOnComplete call(this, block);
  RunContext rctx{block->ctx, nullptr};
  if (block->ctx.is_gpu()) {
    absl::StatusOr<RunContext> on_stream = streams->For(block->ctx);
    if (!on_stream.ok()) {
      keep.CompleteIfPending(
          absl::Status(on_stream.status().code(),
                       absl::StrCat("operation '", OprName(*block->opr),
                                    "': ", on_stream.status().message())));
      return;
    }
    rctx = *on_stream;
  }
  // Restored on every way out, so operations run inline (NaiveEngine, kAsync)
  // nest correctly.
  struct Running {
    const Opr* outer = t_running_opr;
    BlockProfile* outer_profile = t_running_profile;
    Running(const Opr* opr, BlockProfile* profile) {
      t_running_opr = opr;
      t_running_profile = profile;
    }
    ~Running() {
      t_running_opr = outer;
      t_running_profile = outer_profile;
    }
  } running(block->opr, block->profile.get());
  if (BlockProfile* profile = block->profile.get()) {
    profile->started_ns = ProfileNow();
    profile->worker = WorkerPool::CurrentWorkerName();
    if (rctx.stream != nullptr) StartDeviceTiming(profile, rctx);
  }
  try {
    block->opr->fn(rctx, std::move(call));
  } catch (const std::exception& e) {
    keep.CompleteIfPending(absl::InternalError(absl::StrCat(
        "operation '", OprName(*block->opr), "' threw: ", e.what())));
  } catch (...) {
    keep.CompleteIfPending(absl::InternalError(
        absl::StrCat("operation '", OprName(*block->opr),
                     "' threw something that is not a std::exception")));
  }
}

// ---------------------------------------------------------------------------
// Completing

absl::Status Engine::InheritedError(const OprBlock& block) {
  if (vars_with_error_.load(std::memory_order_acquire) == 0) {
    return absl::OkStatus();
  }
  for (VarHandle var : block.opr->vars()) {
    absl::Status error = var->error();
    if (!error.ok()) return error;
  }
  return absl::OkStatus();
}

void Engine::RecordError(const Opr& opr, const absl::Status& status,
                         bool mark_vars) {
  for (VarHandle var : opr.mutable_vars()) {
    if (mark_vars && var->SetError(status)) {
      vars_with_error_.fetch_add(1, std::memory_order_acq_rel);
    }
  }
  internal::MutexLock lock(&all_mu_);
  if (first_error_.ok()) first_error_ = status;
}

void Engine::Complete(OprBlock* block, absl::Status status) {
  const Opr& opr = *block->opr;
  if (!status.ok()) RecordError(opr, status, /*mark_vars=*/!opr.internal);
  if (block->profile) {
    RecordProfile(block, status);
    profiled_in_flight_.fetch_sub(1, std::memory_order_relaxed);
  }
  if (block->submitted) {
    GrantList granted;
    for (VarHandle var : opr.const_vars()) {
      const size_t from = granted.size();
      var->CompleteRead(&granted);
      NoteGrants(block, var, granted, from);
    }
    for (VarHandle var : opr.mutable_vars()) {
      const size_t from = granted.size();
      var->CompleteWrite(&granted, opr.counts_version);
      NoteGrants(block, var, granted, from);
    }
    if (opr.internal && opr.prop == FnProperty::kDeleteVar) {
      FreeDeletedVars(opr);
    }
    for (OprBlock* next : granted) {
      if (next->wait.fetch_sub(1, std::memory_order_acq_rel) == 1) {
        OnReady(next);
      }
    }
  }
  // The block stays: the caller holds a copy of its callback (or, for
  // CompleteUnrun and a dropped callback, frees it after this returns).
  if (block->waiter != nullptr) block->waiter->Notify();
  FinishOne();
}

void Engine::CompleteUnrun(OprBlock* block, absl::Status status) {
  // Nobody else holds the block yet: no copy of its callback exists.
  block->refs.store(0, std::memory_order_relaxed);
  block->completed.store(true, std::memory_order_relaxed);
  Complete(block, std::move(status));
  ReleaseBlock(block);
}

void Engine::NoteProfiledGrants(const OprBlock* by, const Var* var,
                                const GrantList& granted, size_t from) {
  for (size_t k = from; k < granted.size(); ++k) {
    BlockProfile* profile = granted[k]->profile.get();
    if (profile == nullptr) continue;
    const Opr& next = *granted[k]->opr;
    absl::Span<const VarHandle> vars = next.vars();
    for (size_t i = 0; i < vars.size(); ++i) {
      if (vars[i] == var) {
        // Written before the wait count falls, so whoever makes the block
        // ready (and later its record) sees it.
        profile->granted_ns[i] = ProfileNow();
        profile->granted_after[i] = static_cast<int64_t>(by->seq);
      }
    }
  }
}

int64_t Engine::ProfileNow() const { return SteadyNs() - created_ns_; }

void Engine::StartDeviceTiming(BlockProfile* profile, const RunContext& rctx) {
  absl::StatusOr<cuda::EventHandle> start =
      cuda::TimingEventCreate(rctx.ctx.dev_id);
  if (!start.ok()) return;  // profiled without device time
  if (!cuda::EventRecord(*start, rctx.stream).ok()) {
    cuda::EventDestroy(*start);
    return;
  }
  profile->device = rctx.ctx.dev_id;
  profile->device_start = *start;
  profile->device_stream = rctx.stream;
}

int64_t Engine::FinishDeviceTiming(BlockProfile* profile) {
  if (profile->device_start == nullptr) return -1;
  // An operation that did not mark its end (kAsync, PushAsync) completed
  // after its work: the end marked now is later than the work's by the
  // completion's latency.
  MarkDeviceEnd(profile, profile->device_stream);
  int64_t ns = -1;
  if (profile->device_end != nullptr) {
    absl::StatusOr<int64_t> elapsed =
        cuda::EventElapsedNs(profile->device_start, profile->device_end);
    if (elapsed.ok()) ns = *elapsed;
    cuda::EventDestroy(profile->device_end);
  }
  cuda::EventDestroy(profile->device_start);
  profile->device_start = profile->device_end = nullptr;
  return ns;
}

void Engine::RecordProfile(OprBlock* block, const absl::Status& status) {
  const int64_t device_ns = FinishDeviceTiming(block->profile.get());
  const BlockProfile& p = *block->profile;
  const Opr& opr = *block->opr;
  OprRecord record;
  record.name = OprName(opr);
  record.seq = block->seq;
  record.ctx = block->ctx;
  record.prop = opr.prop;
  record.worker = p.worker != nullptr ? *p.worker : "inline";
  record.queued_ns = p.queued_ns;
  record.ready_ns = p.ready_ns > 0 ? p.ready_ns : p.queued_ns;
  record.started_ns = p.started_ns;
  record.finished_ns = ProfileNow();
  record.device_ns = device_ns;
  absl::Span<const VarHandle> vars = opr.vars();
  for (size_t i = 0; i < vars.size(); ++i) {
    OprRecord::Dependency dep;
    dep.var = vars[i]->id();
    dep.var_name = vars[i]->name();
    dep.write = opr.writes(i);
    dep.granted_ns = p.granted_ns[i];
    dep.after = p.granted_after[i];
    dep.wait_ns = p.granted_ns[i] - p.queued_ns;
    record.deps.push_back(std::move(dep));
  }
  record.status = status;
  profiler_.Add(std::move(record));
}

absl::Status Engine::DumpProfile(const std::string& path) const {
  std::ofstream out(path, std::ios::trunc);
  if (out) out << profiler_.ChromeTrace();
  out.close();
  if (!out) {
    return absl::UnavailableError(
        absl::StrCat("DumpProfile: cannot write '", path, "'"));
  }
  return absl::OkStatus();
}

void Engine::FreeDeletedVars(const Opr& opr) {
  for (VarHandle var : opr.mutable_vars()) {
    // Later pushes on it were refused, so its queue is empty.
    if (!var->TakeError().ok()) {
      vars_with_error_.fetch_sub(1, std::memory_order_acq_rel);
    }
    internal::MutexLock lock(&vars_mu_);
    live_vars_.erase(var);
    delete var;
  }
}

void Engine::ReleaseBlock(OprBlock* block) {
  block->opr->Unref();
  delete block;
}

void Engine::FinishOne() {
  if (!DeferFinish(this)) FinishMany(1);
}

void Engine::FinishMany(int64_t count) {
  int64_t n = pending_.load(std::memory_order_relaxed);
  while (n > count) {
    if (pending_.compare_exchange_weak(n, n - count,
                                       std::memory_order_acq_rel)) {
      return;
    }
  }
  internal::MutexLock lock(&all_mu_);
  pending_.fetch_sub(count, std::memory_order_acq_rel);
  all_done_.SignalAll();
}

// ---------------------------------------------------------------------------
// Waiting

absl::Status Engine::WaitForVar(VarHandle var) {
  {
    internal::MutexLock lock(&vars_mu_);
    if (!live_vars_.contains(var) || var->deleting_.load()) {
      return absl::FailedPreconditionError(
          "WaitForVar on a variable already passed to DeleteVariable");
    }
  }
  if (const Opr* running = t_running_opr) {
    auto uses = [var](const auto& vars) {
      return std::find(vars.begin(), vars.end(), var) != vars.end();
    };
    // Writing `var`, the caller is one of the writes it would wait for.
    if (uses(running->mutable_vars())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "WaitForVar called inside operation '", OprName(*running),
          "', which writes that variable: it would wait for itself"));
    }
    // Reading `var`, every write pushed before the caller is done; a write
    // pushed since waits for the caller, so it cannot be waited for here.
    if (uses(running->const_vars())) return absl::OkStatus();
  }
  // A read: it runs once every write pushed before it is done, and does
  // not wait for earlier reads.
  Opr* opr = new Opr([](RunContext, CallbackOnComplete done) { done(); }, {var},
                     {}, FnProperty::kAsync, "WaitForVar");
  opr->internal = true;
  opr->counts_version = false;
  BlockWaiter waiter;
  PushBlock(opr, Context::CPU(), 0, &waiter);
  waiter.Wait();
  absl::Status error = var->TakeError();
  if (!error.ok()) vars_with_error_.fetch_sub(1, std::memory_order_acq_rel);
  return error;
}

absl::Status Engine::WaitForAll() {
  // The waiting thread runs queued CPU operations until none is queued, as
  // TBB's does: its core is otherwise idle, and a worker the kernel placed
  // on a busy core then costs half of the throughput, not all of it. Not
  // inside an operation: that would nest operations on one stack.
  //
  // Out of queued work, it polls a while before it sleeps: the last
  // operations are usually finishing on the workers, and a thread woken
  // from a condition variable starts some tens of microseconds late (on a
  // virtual machine more), which the caller would wait on top of the work.
  //
  // It polls only while a CPU is free for it (thread/spin_wait.h): on a
  // machine with more threads than CPUs the workers it waits for need the
  // CPU more.
  if (t_running_opr == nullptr && t_inline.depth == 0) {
    // Its streams stay empty: CPU operations create none.
    OprRunner::Worker waiter(OprRunner{this}, -1);
    const int usable = ProcessUsableCpus().count;
    auto done = [this] {
      return pending_.load(std::memory_order_acquire) == 0;
    };
    int64_t idle_since = 0;  // 0: it ran an operation since its last look
    while (!done()) {
      if (dispatcher_->RunOneQueued(&waiter)) {
        idle_since = 0;
        continue;
      }
      const int64_t now = internal::cpu_gate::detail::NowNs();
      if (idle_since == 0) idle_since = now;
      if (now - idle_since > kWaitSpinNs ||
          !internal::cpu_gate::MaySpin(usable)) {
        break;
      }
      // A short look before the queues again.
      internal::SpinWhileCpuFree(done, 2'000, usable);
    }
  }
  internal::MutexLock lock(&all_mu_);
  while (pending_.load() != 0) all_done_.Wait(&all_mu_);
  absl::Status first = std::move(first_error_);
  first_error_ = absl::OkStatus();
  return first;
}

void Engine::NotifyShutdown() {
  shutting_down_.store(true, std::memory_order_release);
}

}  // namespace actorflow::engine
