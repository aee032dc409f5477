// `actorflow run PLAN`: one process runs the plan (or its rank's share of a
// multi-machine job), with checkpoints, traces and stats as asked, and
// prints one JSON line.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actorflow/checkpoint.h"
#include "actorflow/session.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/preempt_signals.h"
#include "cli/run_flags.h"
#include "cli/run_report.h"
#include "cli/stall_line.h"
#include "diagnosis/chrome_trace.h"
#include "net/job.h"
#include "plan/plan_util.h"
#include "runtime/checkpoint_writer.h"
#include "runtime/progress_line.h"

namespace actorflow::internal::cli {
namespace {

constexpr char kAbout[] =
    "Runs PLAN; the last line on stdout is a JSON summary with one entry per "
    "checksum task (pieces, checksum, in_order). Plans with feed or fetch "
    "tasks need a program to feed them (actorflow/session.h).\n\n"
    "A multi-machine plan (tasks on stream.machine_id 0..N-1) runs as N "
    "processes, one per machine id, registers moving between them over "
    "gRPC. Each is `actorflow run PLAN` with its place in the job from the "
    "environment, as torchrun, mpirun, mpiexec and srun set it: RANK and "
    "WORLD_SIZE (else OMPI_COMM_WORLD_RANK/_SIZE, PMI_RANK/PMI_SIZE or "
    "SLURM_PROCID/SLURM_NTASKS), MASTER_ADDR (under Slurm by default the "
    "first host of SLURM_JOB_NODELIST) and MASTER_PORT (default "
    "127.0.0.1:29500), where rank 0 serves the job's "
    "control service; the flags below override them. With "
    "ACTORFLOW_JOB_TOKEN set, every call between ranks carries it and a "
    "call without it is refused. Each rank prints its "
    "own JSON line, with \"rank\" and \"world_size\"; a failure on any rank "
    "ends every rank (exit 1), naming the rank, its task and piece. --trace "
    "writes FILE.rankR.";

// A failure after the plan was accepted: `what` and the message on stderr,
// the JSON error line on stdout (`fields`, such as the rank, between the
// status and the error).
int RunFailed(const char* what, const absl::Status& status,
              const Json& fields = Json::object()) {
  std::fprintf(stderr, "actorflow: %s%s\n", what,
               std::string(status.message()).c_str());
  Json line = StatusLine("error", fields);
  line["error"] = std::string(status.message());
  PrintJsonLine(line);
  return kExitRunFailed;
}

// Every task's figures of several runs, added up.
void AddStats(const RunStats& run, RunStats* all) {
  all->pieces += run.pieces;
  all->acts += run.acts;
  all->wall_ms += run.wall_ms;
  for (const auto& [name, task] : run.tasks) {
    TaskStats& sum = all->tasks[name];
    sum.acts += task.acts;
    sum.busy_ns += task.busy_ns;
    sum.input_wait_ns += task.input_wait_ns;
    sum.output_wait_ns += task.output_wait_ns;
  }
}

void AddTrace(const RunTrace& run, RunTrace* all) {
  if (all->tasks.empty()) {
    *all = run;
    return;
  }
  for (size_t t = 0; t < all->tasks.size() && t < run.tasks.size(); ++t) {
    std::vector<ActSpan>& spans = all->tasks[t].spans;
    spans.insert(spans.end(), run.tasks[t].spans.begin(),
                 run.tasks[t].spans.end());
  }
}

// Pieces [start, total) as runs that end at every multiple of `every` (0:
// one run) and at `total`, calling `checkpoint` after each. What a run
// makes does not depend on where runs end: piece ids and every kernel's
// state carry over from one to the next.
absl::StatusOr<RunStats> RunInChunks(
    int64_t start, int64_t total, int64_t every, Session* session,
    const std::function<absl::StatusOr<RunStats>(int64_t)>& run,
    const std::function<absl::Status()>& checkpoint, RunTrace* trace) {
  RunStats all;
  all.first_piece = start;
  for (int64_t done = start; done < total;) {
    int64_t n = total - done;
    if (every > 0) n = std::min(n, every - done % every);
    absl::StatusOr<RunStats> stats = run(n);
    if (!stats.ok()) return stats.status();
    AddStats(*stats, &all);
    if (session != nullptr && trace != nullptr) {
      AddTrace(session->trace(), trace);
    }
    done += stats->pieces;
    absl::Status saved = checkpoint();
    if (!saved.ok()) return saved;
    if (stats->pieces < n) break;  // the job's cut: preempted
  }
  return all;
}

// What a rank of a job adds to its JSON line: where and why the job was
// preempted (the fields after the status; null: it was not), and the
// "job" entry of --stats.
struct JobLine {
  std::function<Json()> preempted;
  std::function<Json()> stats;
  // Rank 0's: every rank's sinks ("job_sinks"); null elsewhere.
  std::function<Json()> job_sinks;
};

// Runs `run` on `session` (with the progress line) and prints the result:
// the JSON line, with `fields` ("rank", ...) after the status.
int RunSession(const std::string& path, Session* session, const RunFlags& flags,
               const Json& fields, const std::vector<std::string>& last_tasks,
               const std::function<absl::StatusOr<RunStats>()>& run,
               const std::function<absl::Status()>& after = nullptr,
               const RunTrace* trace = nullptr, const JobLine* job = nullptr) {
  std::optional<ProgressLine> progress;
  const bool terminal = isatty(STDERR_FILENO) == 1;
  const bool forced = flags.progress_on && !flags.progress_off;
  if (session != nullptr && !flags.progress_off && (forced || terminal)) {
    progress.emplace(session, stderr, terminal, forced ? 0.0 : 1.0,
                     /*final_line=*/forced);
    progress->Start();
  }
  std::optional<StallLine> stalls;
  if (session != nullptr && (flags.stats || flags.stats_every_s > 0)) {
    stalls.emplace(session, last_tasks, flags.stats_every_s, stderr);
    stalls->Start();
  }
  absl::StatusOr<RunStats> result = run();
  if (progress) progress->Stop();
  if (stalls) stalls->Stop();
  if (result.ok() && after) {
    absl::Status finished = after();
    if (!finished.ok()) result = finished;
  }
  if (!result.ok()) {
    int code = RunFailed("run failed: ", result.status(), fields);
    if (session != nullptr && session->left_threads_running()) {
      // A thread is still inside a kernel: leave without static destructors.
      std::fflush(nullptr);
      std::_Exit(code);
    }
    return code;
  }
  if (!flags.trace_path.empty() && session != nullptr) {
    absl::Status written = WriteChromeTrace(
        trace != nullptr ? *trace : session->trace(), flags.trace_path);
    if (!written.ok()) return RunFailed("", written, fields);
  }
  Json sinks = Json::object();
  if (session != nullptr) {
    for (const auto& [name, sink] : session->Sinks()) {
      sinks[name] = {{"pieces", sink.pieces},
                     {"checksum", JsonNumber(sink.checksum)},
                     {"in_order", sink.in_order}};
    }
  }
  std::fprintf(stderr, "actorflow: %s: %lld pieces, %lld acts in %.3f ms\n",
               path.c_str(), static_cast<long long>(result->pieces),
               static_cast<long long>(result->acts), result->wall_ms);
  const Json stopped = job != nullptr ? job->preempted() : Json();
  Json line = StatusLine(stopped.is_null() ? "ok" : "preempted", fields);
  if (!stopped.is_null()) {
    for (const auto& [key, value] : stopped.items()) line[key] = value;
  }
  line["pieces"] = result->pieces;
  line["wall_ms"] = JsonRounded(result->wall_ms, 3);
  line["sinks"] = std::move(sinks);
  if (job != nullptr) {
    Json all = job->job_sinks();
    if (!all.is_null()) line["job_sinks"] = std::move(all);
  }
  if (flags.stats) {
    line["stats"] = ReportStats(*result);
    if (session != nullptr) {
      line["stats"]["runtime"] = ReportRuntime(session->threads());
    }
    if (stalls) {
      Json whole = stalls->Whole(*result);
      std::fprintf(stderr, "stalls: %s\n",
                   whole["verdict"].get<std::string>().c_str());
      line["stats"]["stalls"] = std::move(whole);
    }
    if (job != nullptr) line["stats"]["job"] = job->stats();
  }
  PrintJsonLine(line);
  return stopped.is_null() ? kExitOk : kExitPreempted;
}

// Pieces [start, total) as one run that takes a snapshot at every multiple
// of `every` on the way (the tasks save their state as they pass it, the run
// goes on) and one at the end, each written by `writer` while the run goes
// on.
absl::StatusOr<RunStats> RunWithCheckpoints(Session* session, int64_t start,
                                            int64_t total, int64_t every,
                                            CheckpointWriter* writer) {
  std::vector<int64_t> cuts;
  if (every > 0) {
    for (int64_t cut = (start / every + 1) * every; cut < total; cut += every) {
      cuts.push_back(cut);
    }
  }
  RunStats stats;
  stats.first_piece = start;
  if (total > start) {
    absl::Status started = session->Start(total - start, cuts);
    if (!started.ok()) return started;
    for (int64_t cut : cuts) {
      absl::StatusOr<CheckpointData> data =
          session->TakeSnapshot(cut, absl::InfiniteDuration());
      if (!data.ok()) {
        (void)session->Wait();
        return data.status();
      }
      absl::Status submitted = writer->Submit(std::move(*data));
      if (!submitted.ok()) {
        session->Abort(submitted);
        (void)session->Wait();
        return submitted;
      }
    }
    absl::StatusOr<RunStats> ran = session->Wait();
    if (!ran.ok()) return ran.status();
    stats = *ran;
  }
  if (total > start || !ResolveCheckpoint(writer->root()).ok()) {
    absl::StatusOr<CheckpointData> end = session->Snapshot();
    if (!end.ok()) return end.status();
    absl::Status submitted = writer->Submit(std::move(*end));
    if (!submitted.ok()) return submitted;
  }
  return stats;
}

// --resume's word on stderr: where the run starts.
void ReportResume(const std::string& dir, int64_t piece, int rank) {
  const std::string who = rank >= 0 ? absl::StrCat("rank ", rank, ": ") : "";
  if (piece == 0) {
    std::fprintf(stderr,
                 "actorflow: %s--resume: no checkpoint in %s yet: starting "
                 "from the beginning (piece 0)\n",
                 who.c_str(), dir.c_str());
  } else {
    std::fprintf(stderr,
                 "actorflow: %sresumed from the checkpoint at piece "
                 "%lld in %s\n",
                 who.c_str(), static_cast<long long>(piece), dir.c_str());
  }
}

absl::Status PastTheEnd(int64_t start, int64_t pieces) {
  return absl::InvalidArgumentError(
      absl::StrCat("--resume: the checkpoint is at piece ", start,
                   ", past the run's ", pieces, " pieces (--pieces)"));
}

// One process of a multi-machine job: joins, runs its share, waits for
// every rank. SIGTERM and SIGUSR1 preempt the whole job (see
// --preempt-grace).
int RunJob(const std::string& path, Plan plan, RunFlags flags,
           SessionOptions options) {
  const net::JobConfig& job_config = flags.job;
  Json prefix = {{"rank", job_config.rank},
                 {"world_size", job_config.world_size}};
  if (!flags.trace_path.empty()) {
    absl::StrAppend(&flags.trace_path, ".rank", job_config.rank);
  }
  const int64_t pieces =
      flags.pieces >= 0 ? flags.pieces : plan.total_piece_num();
  // The whole plan's: a rank without any reports its busiest stage alone.
  const std::vector<std::string> last_tasks = LastTaskNames(plan);
  PreemptSignals signals;  // from before the join: none is lost
  absl::StatusOr<std::unique_ptr<net::Job>> job =
      net::Job::Create(plan, pieces, job_config, std::move(options));
  if (!job.ok()) {
    if (absl::IsInvalidArgument(job.status())) {
      return InvalidStatus(job.status());
    }
    return RunFailed("", job.status(), prefix);
  }
  net::Job* running = job->get();
  const absl::Duration grace = absl::Seconds(flags.preempt_grace_s);
  signals.Watch(
      [running](const std::string& why) {
        std::fprintf(stderr,
                     "actorflow: rank %d: %s: preempting the job at a cut\n",
                     running->config().rank, why.c_str());
        running->Preempt(why);
      },
      grace,
      [running, grace] {
        running->Abort(absl::DeadlineExceededError(absl::StrCat(
            "rank ", running->config().rank, ": preempted (",
            running->preempt_reason(),
            "), but the job did not reach its cut and checkpoint within "
            "--preempt-grace=",
            absl::FormatDuration(grace))));
      });
  const bool checkpoints = flags.checkpoints();
  JobLine job_line;
  job_line.stats = [running] {
    return ReportControl(running->control_times());
  };
  job_line.job_sinks = [running]() -> Json {
    if (running->config().rank != 0) return Json();
    std::map<std::string, Json> sorted;  // by task name, as one process
    for (const net::SinkReport& sink : running->JobSinks()) {
      sorted[sink.task()] = {{"pieces", sink.pieces()},
                             {"checksum", JsonNumber(sink.checksum())},
                             {"in_order", sink.in_order()}};
    }
    Json all = Json::object();
    for (auto& [task, sink] : sorted) all[task] = std::move(sink);
    return all;
  };
  job_line.preempted = [&]() -> Json {
    const int64_t cut = running->preempted_at();
    if (cut < 0) return Json();
    Json fields = {{"preempted_at", cut},
                   {"reason", running->preempt_reason()}};
    std::fprintf(stderr,
                 "actorflow: rank %d: preempted (%s): stopped before piece "
                 "%lld%s\n",
                 running->config().rank, running->preempt_reason().c_str(),
                 static_cast<long long>(cut),
                 checkpoints ? "; checkpointed there, run again with --resume"
                             : "; nothing saved (no --checkpoint-dir)");
    if (checkpoints) fields["checkpoint"] = cut;
    return fields;
  };
  int code;
  if (!checkpoints) {
    code = RunSession(
        path, running->session(), flags, prefix, last_tasks,
        [&] { return running->Run(pieces); }, [&] { return running->Finish(); },
        nullptr, &job_line);
    signals.Stop();
    return code;
  }
  const int64_t start = std::max<int64_t>(running->resumed_from(), 0);
  if (flags.resume) {
    ReportResume(flags.checkpoint_dir, start, running->config().rank);
    prefix["resumed_from"] = start;
  }
  if (start > pieces) {
    signals.Stop();
    return RunFailed("", PastTheEnd(start, pieces), prefix);
  }
  RunTrace trace;
  code = RunSession(
      path, running->session(), flags, prefix, last_tasks,
      [&] {
        return RunInChunks(
            start, pieces, flags.checkpoint_every, running->session(),
            [&](int64_t n) { return running->Run(n); },
            [&] { return running->Checkpoint(flags.keep_last).status(); },
            flags.trace_path.empty() ? nullptr : &trace);
      },
      [&] { return running->Finish(); }, &trace, &job_line);
  signals.Stop();
  return code;
}

// One compile (each kernel's Init runs once), one run.
int RunPlanFile(const std::string& path, const RunFlags& flags) {
  absl::StatusOr<Plan> loaded = LoadPlanArg(path);
  if (!loaded.ok()) return InvalidStatus(loaded.status());
  std::vector<std::string> boundary;
  for (const TaskProto& task : loaded->task()) {
    if (IsFeed(task) || IsFetch(task)) boundary.push_back(TaskLabel(task));
  }
  if (!boundary.empty()) {
    return Invalid({absl::StrCat(
        absl::StrJoin(boundary, ", "),
        ": feed and fetch tasks connect a plan to a program; run this plan "
        "through a Session (actorflow/session.h), not the command")});
  }
  const std::vector<std::string> last_tasks = LastTaskNames(*loaded);
  SessionOptions options;
  options.trace = !flags.trace_path.empty();
  options.stats = flags.stats || flags.stats_every_s > 0;
  options.check_memory_sharing = flags.check_memory_sharing;
  options.usable_cpus = flags.cpus;
  options.stream_sharing = flags.sharing;
  options.max_register_bytes = flags.max_register_bytes;
  options.timeout = absl::Seconds(flags.timeout_s);
  options.stall = absl::Seconds(flags.stall_s);
  if (options.trace && !std::ofstream(flags.trace_path, std::ios::app)) {
    // Found out before the run, not after it.
    return UsageError(absl::StrCat("--trace: cannot write ", flags.trace_path,
                                   ": ", std::strerror(errno)));
  }
  if (flags.job.world_size > 1) {
    return RunJob(path, std::move(*loaded), flags, std::move(options));
  }
  const int64_t total =
      flags.pieces >= 0 ? flags.pieces : loaded->total_piece_num();
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(std::move(*loaded), std::move(options));
  if (!session.ok()) {
    if (absl::IsInvalidArgument(session.status())) {
      return InvalidStatus(session.status());
    }
    return RunFailed("", session.status());
  }
  if (!flags.checkpoints()) {
    return RunSession(path, session->get(), flags, Json::object(), last_tasks,
                      [&] { return (*session)->Run(flags.pieces); });
  }
  int64_t start = 0;
  Json resumed = Json::object();
  if (flags.resume) {
    absl::StatusOr<std::string> found = ResolveCheckpoint(flags.checkpoint_dir);
    if (found.ok()) {
      absl::StatusOr<CheckpointInfo> info = (*session)->Restore(*found);
      if (!info.ok()) return RunFailed("--resume: ", info.status());
      start = info->piece;
    } else if (!absl::IsNotFound(found.status())) {
      return RunFailed("--resume: ", found.status());
    }
    ReportResume(flags.checkpoint_dir, start, -1);
    resumed["resumed_from"] = start;
  }
  if (start > total) return RunFailed("", PastTheEnd(start, total), resumed);
  CheckpointWriteOptions write;
  write.keep_last = flags.keep_last;
  CheckpointWriter writer(flags.checkpoint_dir, write);
  Session* running = session->get();
  return RunSession(path, running, flags, resumed, last_tasks,
                    [&]() -> absl::StatusOr<RunStats> {
                      absl::StatusOr<RunStats> stats =
                          RunWithCheckpoints(running, start, total,
                                             flags.checkpoint_every, &writer);
                      absl::Status flushed = writer.Flush();
                      if (stats.ok() && !flushed.ok()) return flushed;
                      return stats;
                    });
}

class RunCommand : public Command {
 public:
  RunCommand() : Command("actorflow run PLAN [--pieces=N] [flags]", kAbout) {
    // The environment's place in a job first; the flags override it.
    absl::StatusOr<net::JobConfig> job = net::JobConfigFromEnv();
    if (job.ok()) {
      run_.job = *job;
    } else {
      environment_problem_ = std::string(job.status().message());
    }
    TakesPlanOperand();
    DeclareRunFlags(&run_, &flags());
  }

  int Run(const std::vector<std::string>&) override {
    if (!environment_problem_.empty()) return UsageError(environment_problem_);
    if (operands_.empty()) return UsageError("run: missing PLAN");
    absl::Status checked = CheckRunFlags(&run_);
    if (!checked.ok()) return UsageError(std::string(checked.message()));
    return RunPlanFile(operands_[0], run_);
  }

 private:
  RunFlags run_;
  std::string environment_problem_;
};

}  // namespace

std::unique_ptr<Command> MakeRunCommand() {
  return std::make_unique<RunCommand>();
}

}  // namespace actorflow::internal::cli
