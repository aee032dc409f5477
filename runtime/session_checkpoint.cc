// Session's checkpoints (actorflow/session.h, docs/checkpoints.md): the plan
// at rest (Snapshot), cuts taken as a run goes by (OnCut, TakeSnapshot),
// and restores. States are saved and restored on each task's own thread.
#include <algorithm>
#include <exception>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "plan/plan_signature.h"
#include "plan/plan_util.h"
#include "runtime/session_impl.h"

namespace actorflow::internal {

namespace {

std::string Seconds(absl::Duration duration) {
  return absl::StrFormat("%.2f s", absl::ToDoubleSeconds(duration));
}

// A kernel that throws fails its save or restore like one that returns an
// error.
template <typename Fn>
absl::Status Guarded(Fn&& fn) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("kernel threw: ", e.what()));
  } catch (...) {
    return absl::InternalError("kernel threw a non-std exception");
  }
}

}  // namespace

void SessionImpl::HandleState(int32_t a, bool save) {
  StateSlot& slot = state_slots_[a];
  Actor& actor = *actors_[a];
  Kernel& kernel = actor.mutable_kernel();
  slot.status = absl::OkStatus();
  if (save) {
    const int64_t begin = SteadyNowNs();
    slot.acts = actor.act_count();
    slot.state = KernelState();
    if (kernel.has_state()) {
      slot.status = actor.DrainStream();
      if (slot.status.ok()) {
        slot.status = Guarded([&] {
          return kernel.SaveState(actor.StateContext(slot.piece + slot.acts),
                                  &slot.state);
        });
      }
    }
    slot.save_ns = SteadyNowNs() - begin;
  } else {
    if (slot.restore != nullptr) {
      slot.status = actor.DrainStream();
      if (slot.status.ok()) {
        slot.status = Guarded([&] {
          return kernel.RestoreState(actor.StateContext(slot.piece),
                                     *slot.restore);
        });
      }
    }
    if (slot.status.ok()) actor.StartAt(slot.piece);
  }
  stating_.Decrement();
}

bool SessionImpl::AtRest(int64_t* acts) const {
  *acts = actors_.empty() ? 0 : actors_[0]->act_count();
  for (const auto& actor : actors_) {
    if (actor->act_count() != *acts) return false;
  }
  return true;
}

std::vector<std::string> SessionImpl::StatefulTasks() const {
  std::vector<std::string> names;
  for (const auto& actor : actors_) {
    if (actor->kernel().has_state()) names.push_back(actor->task().name());
  }
  return names;
}

const std::vector<TaskSignature>& SessionImpl::Signature() {
  if (signature_.empty()) signature_ = SignPlan(compiled_->plan);
  return signature_;
}

absl::StatusOr<CheckpointData> SessionImpl::TakeStates(int64_t acts,
                                                       absl::Time deadline) {
  const int n = static_cast<int>(actors_.size());
  auto left = [&] {
    return std::max(deadline - absl::Now(), absl::ZeroDuration());
  };
  if (states_pending_) {
    if (!stating_.WaitFor(left())) {
      return absl::DeadlineExceededError(
          "Snapshot: an earlier snapshot still waits for a task inside its "
          "kernel");
    }
    states_pending_ = false;
  }
  for (StateSlot& slot : state_slots_) {
    slot.restore = nullptr;
    slot.piece = base_piece_;
  }
  stating_.Reset(n);
  for (int a = 0; a < n; ++a) {
    if (!SendCmd(a, ActorCmd::kSaveState).ok()) stating_.Decrement();
  }
  if (!stating_.WaitFor(left())) {
    states_pending_ = true;
    // A task answers on its thread, so one inside its kernel holds up
    // every task that shares the thread.
    const absl::flat_hash_set<StreamKey> in_kernels = ThreadsInKernels();
    std::vector<std::string> in_kernel, behind;
    for (int a = 0; a < n; ++a) {
      if (actors_[a]->kernel_since_ns() != 0) {
        in_kernel.push_back(TaskLabel(actors_[a]->task()));
      } else if (in_kernels.contains(thread_keys_[a])) {
        behind.push_back(TaskLabel(actors_[a]->task()));
      }
    }
    std::string why;
    if (!in_kernel.empty()) {
      why = absl::StrCat(" (inside a kernel: ", absl::StrJoin(in_kernel, ", "),
                         behind.empty() ? "" : "; sharing their threads: ",
                         absl::StrJoin(behind, ", "), ")");
    }
    return absl::DeadlineExceededError(
        absl::StrCat("Snapshot: the tasks did not answer in time", why));
  }
  absl::Status failed = monitor_->status();
  if (!failed.ok()) return failed;
  for (int a = 0; a < n; ++a) {
    if (state_slots_[a].acts != acts) {
      return absl::AbortedError("a task acted while the states were taken");
    }
  }
  CheckpointData data;
  data.piece = base_piece_ + acts;
  data.pause_ms = LongestPauseMs(state_slots_);
  data.plan = Signature();
  for (int a = 0; a < n; ++a) {
    StateSlot& slot = state_slots_[a];
    const Actor& actor = *actors_[a];
    if (!slot.status.ok()) {
      return absl::Status(
          slot.status.code(),
          absl::StrCat(TaskLabel(actor.task()),
                       ": saving its state: ", slot.status.message()));
    }
    if (!actor.kernel().has_state()) continue;
    data.tasks.push_back({actor.task().name(), actor.task().kernel().op_type(),
                          std::move(slot.state)});
  }
  return data;
}

absl::StatusOr<CheckpointData> SessionImpl::Snapshot(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Duration backoff = absl::Microseconds(20);
  while (true) {
    absl::Status failed = monitor_->status();
    if (!failed.ok()) return failed;
    int64_t acts = 0;
    if (AtRest(&acts)) {
      MutexLock lock(&state_mu_);
      absl::StatusOr<CheckpointData> data = TakeStates(acts, deadline);
      if (!absl::IsAborted(data.status())) return data;
    }
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      int64_t low = INT64_MAX, high = 0;
      std::string behind, ahead;
      for (const auto& actor : actors_) {
        const int64_t count = actor->act_count();
        if (count < low) low = count, behind = actor->task().name();
        if (count > high) high = count, ahead = actor->task().name();
      }
      return absl::DeadlineExceededError(absl::StrCat(
          "Snapshot: the plan did not come to a cut within ", Seconds(timeout),
          ": task '", ahead, "' has acted on ", high, " pieces, task '", behind,
          "' on ", low,
          " (a plan with feeds comes to one once what was fed has gone "
          "through and been fetched; plain sources at the run's end)"));
    }
    // Polls the act counts; the run's end wakes it at once.
    const absl::Duration wait = std::min(backoff, deadline - now);
    if (monitor_->running().WaitFor(wait)) absl::SleepFor(wait);
    backoff = std::min(backoff * 2, absl::Milliseconds(2));
  }
}

absl::StatusOr<CheckpointInfo> SessionImpl::Checkpoint(
    const std::string& root, const CheckpointOptions& options) {
  const int64_t start = SteadyNowNs();
  absl::StatusOr<CheckpointData> data = Snapshot(options.timeout);
  if (!data.ok()) return data.status();
  CheckpointInfo info;
  info.pause_ms = static_cast<double>(SteadyNowNs() - start) / 1e6;
  data->user = options.user;
  CheckpointWriteOptions write;
  write.keep_last = options.keep_last;
  absl::StatusOr<WrittenCheckpoint> written =
      WriteCheckpoint(root, *data, write);
  if (!written.ok()) return written.status();
  info.path = written->path;
  info.piece = written->piece;
  info.bytes = written->bytes;
  info.write_ms = written->write_ms;
  return info;
}

absl::StatusOr<CheckpointInfo> SessionImpl::Restore(
    const std::string& dir, const RestoreOptions& options) {
  absl::StatusOr<std::string> path = ResolveCheckpoint(dir);
  if (!path.ok()) return path.status();
  absl::StatusOr<CheckpointData> data = ReadCheckpoint(*path);
  if (!data.ok()) return data.status();
  absl::Status restored = RestoreFrom(*data, *path, options);
  if (!restored.ok()) return restored;
  CheckpointInfo info;
  info.path = *path;
  info.piece = data->piece;
  info.user = std::move(data->user);
  restored_ = info;
  return info;
}

absl::Status SessionImpl::RestoreFrom(const CheckpointData& data,
                                      const std::string& path,
                                      const RestoreOptions& options) {
  MutexLock lock(&mu_);
  absl::Status failed = monitor_->status();
  if (!failed.ok()) return failed;
  if (started_once_) {
    return absl::FailedPreconditionError(
        "Restore: this session has run already; restore before its first "
        "run (or into a new session)");
  }
  MutexLock state_lock(&state_mu_);
  absl::Status same =
      options.caller_checks_plan
          ? CheckSameStatefulTasks(path, data, Signature(), StatefulTasks())
          : CheckSamePlan(path, data, Signature());
  if (!same.ok()) return same;
  if (data.piece < 0) {
    return absl::DataLossError(
        absl::StrCat("checkpoint '", path, "': negative piece ", data.piece));
  }
  absl::flat_hash_map<std::string, const TaskState*> saved;
  for (const TaskState& task : data.tasks) saved[task.task] = &task;
  const int n = static_cast<int>(actors_.size());
  for (int a = 0; a < n; ++a) {
    const Actor& actor = *actors_[a];
    auto found = saved.find(actor.task().name());
    const bool has = actor.kernel().has_state();
    if (has != (found != saved.end())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint '", path, "': ", TaskLabel(actor.task()),
          has ? " keeps state, but the checkpoint holds none for it"
              : " keeps no state, but the checkpoint holds some for it (was "
                "its kernel bound differently?)"));
    }
    state_slots_[a].restore = has ? &found->second->state : nullptr;
    state_slots_[a].piece = data.piece;
  }
  if (states_pending_) {
    stating_.Wait();
    states_pending_ = false;
  }
  stating_.Reset(n);
  for (int a = 0; a < n; ++a) {
    if (!SendCmd(a, ActorCmd::kRestoreState).ok()) stating_.Decrement();
  }
  stating_.Wait();
  for (int a = 0; a < n; ++a) {
    state_slots_[a].restore = nullptr;
    if (state_slots_[a].status.ok()) continue;
    absl::Status status(
        state_slots_[a].status.code(),
        absl::StrCat("checkpoint '", path, "': ", TaskLabel(actors_[a]->task()),
                     ": ", state_slots_[a].status.message()));
    // Some tasks may hold the checkpoint's state and others not.
    monitor_->ReportFailure(status);
    return status;
  }
  failed = monitor_->status();
  if (!failed.ok()) return failed;
  base_piece_ = data.piece;
  next_piece_ = data.piece;
  return absl::OkStatus();
}

int64_t SessionImpl::next_piece() const {
  MutexLock lock(&mu_);
  return next_piece_;
}
void SessionImpl::OnCut(int32_t a, size_t index) {
  Cut& cut = *cuts_[index];
  StateSlot& slot = cut.slots[a];
  Actor& actor = *actors_[a];
  const int64_t begin = SteadyNowNs();
  slot.status = actor.DrainStream();
  if (slot.status.ok()) {
    slot.status = Guarded([&] {
      return actor.mutable_kernel().SaveState(actor.StateContext(cut.piece),
                                              &slot.state);
    });
  }
  slot.save_ns = SteadyNowNs() - begin;
  cut.pending.Decrement();
}

double SessionImpl::LongestPauseMs(const std::vector<StateSlot>& slots) const {
  absl::flat_hash_map<std::string, int64_t> per_thread;
  int64_t longest = 0;
  for (size_t a = 0; a < slots.size(); ++a) {
    int64_t& ns = per_thread[thread_keys_[a].ToString()];
    ns += slots[a].save_ns;
    longest = std::max(longest, ns);
  }
  return static_cast<double>(longest) / 1e6;
}

absl::StatusOr<CheckpointData> SessionImpl::TakeSnapshot(
    int64_t piece, absl::Duration timeout) {
  Cut* cut = nullptr;
  for (const auto& candidate : cuts_) {
    if (candidate->piece == piece) cut = candidate.get();
  }
  if (cut == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("TakeSnapshot: no snapshot at piece ", piece,
                     " was asked for when this run started"));
  }
  if (cut->taken) {
    return absl::FailedPreconditionError(absl::StrCat(
        "TakeSnapshot: the snapshot at piece ", piece, " was taken already"));
  }
  // A failure stops the tasks short of the cut: it is noticed here.
  const absl::Time deadline = absl::Now() + timeout;
  while (!cut->pending.WaitFor(
      std::min(absl::Milliseconds(20),
               std::max(deadline - absl::Now(), absl::ZeroDuration())))) {
    absl::Status failed = monitor_->status();
    if (!failed.ok()) return failed;
    if (absl::Now() >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("TakeSnapshot: the tasks did not reach piece ", piece,
                       " within ", Seconds(timeout)));
    }
  }
  CheckpointData data;
  data.piece = piece;
  data.pause_ms = LongestPauseMs(cut->slots);
  {
    MutexLock lock(&state_mu_);
    data.plan = Signature();
  }
  for (size_t a = 0; a < actors_.size(); ++a) {
    const Actor& actor = *actors_[a];
    if (!actor.kernel().has_state()) continue;
    StateSlot& slot = cut->slots[a];
    if (!slot.status.ok()) {
      return absl::Status(
          slot.status.code(),
          absl::StrCat(TaskLabel(actor.task()),
                       ": saving its state: ", slot.status.message()));
    }
    data.tasks.push_back({actor.task().name(), actor.task().kernel().op_type(),
                          std::move(slot.state)});
  }
  cut->taken = true;
  return data;
}

}  // namespace actorflow::internal
