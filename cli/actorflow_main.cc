// The `actorflow` command: run, validate or draw a Plan, or compile a Job.
//
// This file holds main(). A runner for custom kernels links it with the
// kernels' library (see examples/custom_kernel/).
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "actorflow/checkpoint.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/kernel.h"
#include "actorflow/kernel_library.h"
#include "actorflow/plan_loader.h"
#include "actorflow/session.h"
#include "base/json.h"
#include "cli/flags.h"
#include "compiler/job_compiler.h"
#include "compiler/plan_or_job.h"
#include "diagnosis/chrome_trace.h"
#include "google/protobuf/text_format.h"
#include "net/job.h"
#include "net/launch.h"
#include "plan/plan_dot.h"
#include "plan/plan_util.h"
#include "runtime/checkpoint_writer.h"
#include "runtime/progress_line.h"

namespace actorflow {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitInvalid = 2;

constexpr char kUsage[] =
    R"(actorflow: run a dataflow Plan as actors on polling threads.

usage:
  actorflow run PLAN [--pieces=N] [--trace=FILE] [--stats] [--cpus=N]
                     [--sharing=auto|consecutive|any_thread]
                     [--check-memory-sharing]
                     [--timeout=SECONDS] [--stall=SECONDS]
                     [--progress | --no-progress]
                     [--checkpoint-dir=DIR [--checkpoint-every=PIECES]
                      [--resume] [--keep-last=N]]
                                    run PLAN; the last line on stdout is a
                                    JSON summary with one entry per checksum
                                    task (pieces, checksum, in_order).
                                    Plans with feed or fetch tasks need a
                                    program to feed them (actorflow/session.h)
    --trace=FILE    write when every act ran, as a Chrome trace
                    (chrome://tracing or ui.perfetto.dev): a row per task
    --stats         print a table per task on stderr: acts, busy time (in
                    its kernel), time blocked on inputs (raise the
                    producer's register_num, or speed the producer up) and
                    blocked on free outputs (raise this task's
                    register_num, or speed its consumers up); the JSON line
                    gets them under "stats", keyed by task name; and what
                    the run found of its CPUs: the usable count (affinity
                    mask, cgroup quota, ACTORFLOW_CPUS) and how its streams
                    share threads (under "stats" as "runtime")
    --cpus=N        the CPUs the run may keep busy (default: the affinity
                    mask, fewer under a cgroup CPU quota, or the
                    ACTORFLOW_CPUS environment variable): a waiting thread
                    spins only while no more threads than that are awake,
                    and CPU streams beyond it share threads
    --sharing=MODE  how CPU streams beyond the usable CPUs share threads:
                    consecutive (each thread a fixed block of streams),
                    any_thread (any thread runs any waiting stream, one
                    thread at a time: balanced, but every message between
                    streams crosses a queue), or auto (default: consecutive
                    unless the blocks' task counts come out over 1.2x
                    their mean)
    --check-memory-sharing
                    check the registers that share memory (mem_block_id)
                    as the plan runs: a register written while another of
                    its block holds data fails the run, naming both, and a
                    free register's bytes are poisoned (NaN)
    --timeout=S     fail a run that takes longer than S seconds
    --stall=S       fail a run in which no task acts for S seconds
                    Either prints a hang report on stderr (what each task
                    waits for and who holds it, running kernels and for how
                    long, any cycle of waits) and exits 1. A kernel that
                    never returns is the one thread left unjoined.
    --max-register-bytes=N
                    refuse a plan whose registers (every register_num of
                    every descriptor, host and device, at least 256 bytes
                    each) need more than N bytes, before allocating any;
                    suffix K, M, G; default 16G
    --progress      show a progress line on stderr (pieces done, rate);
                    by default it shows on a terminal once a run has
                    taken a second. --no-progress: never
    --checkpoint-dir=DIR
                    write checkpoints under DIR (DIR/ckpt-<piece>): every
                    task's state at a cut between pieces, written
                    atomically and checksummed; one at the end of the
                    run, and one every --checkpoint-every pieces
    --checkpoint-every=PIECES
                    a checkpoint after every PIECES pieces, taken as the
                    run goes by (each task saves its state as it passes
                    the piece; nothing stops) and written while the next
                    pieces run; results are unchanged
    --resume        start from the newest checkpoint in --checkpoint-dir
                    (none yet: from piece 0, saying so), and run the
                    pieces left of --pieces (or the plan's); the JSON
                    line says "resumed_from": the piece it started at.
                    The sinks then report the whole run's figures
    --keep-last=N   keep only the newest N checkpoints (default: all)
    Multi-machine plans (tasks on stream.machine_id 0..N-1) run as N
    processes, one per machine id, registers moving between them over
    gRPC. Each process is `actorflow run PLAN` with its place in the job
    from the environment, as torchrun and mpirun set it: RANK and
    WORLD_SIZE (or OMPI_COMM_WORLD_RANK and OMPI_COMM_WORLD_SIZE), and
    MASTER_ADDR and MASTER_PORT (default 127.0.0.1:29500), where rank 0
    serves the job's control service. Flags override the environment:
    --rank=R --world-size=N --master-addr=HOST --master-port=PORT
    --host=HOST     the address other ranks reach this one at (default:
                    127.0.0.1 when MASTER_ADDR is loopback, else the host
                    name)
    --peer-timeout=S  a rank silent this long is dead: every rank fails,
                    naming it (default 30)
    --join-timeout=S  how long rank 0 waits for every rank to join
                    (default 60)
    Each rank prints its own JSON line, with "rank" and "world_size"; a
    failure on any rank ends every rank (exit 1), naming the rank and its
    task and piece. --trace=FILE writes FILE.rankR. With
    --checkpoint-dir each rank writes DIR/rank-R/ckpt-<piece>, every rank
    the same cut; --resume starts every rank from the newest checkpoint
    that every rank completed.
  actorflow launch --nproc=N PLAN [--master-port=PORT] [run flags]
                                    run PLAN as N local processes (ranks
                                    0..N-1 on 127.0.0.1, a free port unless
                                    given) and print one JSON line for the
                                    job: the sinks of every rank, or the
                                    first error. No rank outlives it.
  actorflow validate PLAN [--shapes] [--max-register-bytes=N]
                                    print every problem in PLAN (exit 0:
                                    none); --shapes also prints every
                                    register's blobs, inferred or stated
  actorflow dot PLAN                print PLAN as a Graphviz digraph on
                                    stdout (tasks boxed by stream; edges
                                    labelled with regst id, register_num
                                    and blob shapes; dashed: an initial
                                    register). Render: ... | dot -Tsvg
  actorflow compile JOB [-o PLAN] [--dot]
                                    compile JOB (a Job: operators with
                                    placements, proto/job.proto) into a
                                    Plan: one task per operator and device,
                                    copies and boxing between placements,
                                    streams and register_num chosen. -o
                                    writes PLAN (.pbtxt text, .pb binary)
                                    and prints a JSON line (ops, tasks,
                                    copies, boxing, streams,
                                    register_bytes, shared_blocks,
                                    shared_registers, bytes_saved: what
                                    memory sharing saved); without -o the plan
                                    goes to stdout, with --dot its graph.
                                    Every device is assumed present: the
                                    plan may be for another machine.
  actorflow kernels                 list the kernels linked into this binary
                                    (and loaded with --load):
                                    one op_type per line, then the devices
                                    it has a kernel for (cpu, gpu)
  actorflow help                    this text

Every command takes --load=LIB.so (repeatable): a kernel library built
outside actorflow (examples/plugin), loaded before the plan is read, so
that its op_types run like the built-in ones. A bare name is a file in the
current directory, else searched as dlopen searches. A library that cannot
be loaded, registers an op_type already registered, or registers no kernel
is an error (exit 2) naming it.

PLAN is a text-format (.pbtxt) or binary (.pb) actorflow.Plan; see
proto/plan.proto. run, validate, dot and launch take a Job as well (its
first field is `op`), compiled as they load it. Relative paths resolve against the directory you ran
`bazel run` from. --pieces=N overrides the plan's total_piece_num.

exit codes: 0 ok, 1 the run failed (the message names the task and piece),
            2 invalid plan or arguments
)";

// Under every command's generated --help.
constexpr char kCommandEpilog[] =
    "`actorflow --help` explains every command and flag at length. Exit "
    "codes: 0 ok, 1 the run failed, 2 invalid plan or arguments.";

// Under `bazel run`, the process starts in the runfiles tree; the user's
// paths are relative to where they typed the command.
std::string ResolvePath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr || *cwd == '\0') {
    return path;
  }
  return absl::StrCat(cwd, "/", path);
}

// --load's library: a path with a slash as ResolvePath makes it, absolute;
// a bare name is a file in the caller's directory if one is there, else
// dlopen's to search for (LD_LIBRARY_PATH, the system's directories).
std::string KernelLibraryPath(const std::string& given) {
  std::string path = given;
  if (path.find('/') == std::string::npos) {
    const std::string here = ResolvePath("./" + path);
    if (access(here.c_str(), F_OK) != 0) return path;
    path = here;
  }
  path = ResolvePath(path);
  if (path[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof cwd) != nullptr) path = absl::StrCat(cwd, "/", path);
  }
  return path;
}

// {"status": status, then `fields` in their order}.
Json StatusLine(const char* status, const Json& fields) {
  Json line = {{"status", status}};
  for (const auto& [key, value] : fields.items()) line[key] = value;
  return line;
}

int Invalid(const std::vector<std::string>& problems) {
  for (const std::string& problem : problems) {
    std::fprintf(stderr, "error: %s\n", problem.c_str());
  }
  PrintJsonLine({{"status", "invalid"}, {"errors", problems}});
  return kExitInvalid;
}

// The problem once on stderr (and in the JSON line), then where help is.
int UsageError(const std::string& message) {
  const int status = Invalid({message});
  std::fputs("(actorflow help for usage)\n", stderr);
  return status;
}

// An InvalidArgument from compiling holds one problem per line.
int InvalidStatus(const absl::Status& status) {
  return Invalid(absl::StrSplit(status.message(), '\n'));
}

// PATH's plan; a job compiled. Errors: one per line, for Invalid.
absl::StatusOr<Plan> Load(const std::string& path) {
  absl::StatusOr<LoadedPlan> loaded = LoadPlanOrJob(ResolvePath(path));
  if (!loaded.ok()) return loaded.status();
  return std::move(loaded->plan);
}

int Validate(const std::string& path, bool shapes, int64_t max_register_bytes) {
  absl::StatusOr<Plan> loaded = Load(path);
  if (!loaded.ok()) return InvalidStatus(loaded.status());
  CompileOptions options;
  options.max_register_bytes = max_register_bytes;
  absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
      CompilePlan(std::move(*loaded), options);
  if (!compiled.ok()) return InvalidStatus(compiled.status());
  const int tasks = (*compiled)->plan.task_size();
  if (shapes) std::fputs(DescribeShapes(**compiled).c_str(), stdout);
  std::fprintf(stderr, "%s: ok (%d tasks)\n", path.c_str(), tasks);
  PrintJsonLine({{"status", "ok"}, {"tasks", tasks}});
  return kExitOk;
}

// The graph needs the inferred shapes, so an invalid plan gets its problems
// (exit 2) and no graph.
int Dot(const std::string& path) {
  absl::StatusOr<Plan> loaded = Load(path);
  if (!loaded.ok()) return InvalidStatus(loaded.status());
  absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
      CompilePlan(std::move(*loaded));
  if (!compiled.ok()) return InvalidStatus(compiled.status());
  std::fputs(PlanToDot(**compiled).c_str(), stdout);
  return kExitOk;
}

// Parses a command's `args` (args[0]: the command) with `flags`, which
// collects its operands in `positional` (at most one). Empty to go on;
// otherwise the exit status, its --help printed or its usage error reported.
std::optional<int> ParseCommand(const std::vector<std::string>& args,
                                const std::vector<std::string>& positional,
                                FlagSet* flags) {
  absl::Status parsed = flags->Parse(args);
  if (flags->help_requested()) {
    std::fputs(flags->Help().c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(std::string(parsed.message()));
  if (positional.size() > 1) {
    return UsageError(
        absl::StrCat("unexpected argument '", positional[1], "'"));
  }
  return std::nullopt;
}

// `actorflow compile JOB [-o PLAN] [--dot]`.
int Compile(const std::vector<std::string>& args) {
  std::string out_path;
  bool dot = false;
  std::vector<std::string> positional;
  FlagSet flags("actorflow compile JOB [-o PLAN] [--dot]",
                "Compiles JOB (a Job: operators with placements, "
                "proto/job.proto) into a Plan: one task per operator and "
                "device, copies and boxing between placements, streams and "
                "register_num chosen. Every device is assumed present: the "
                "plan may be for another machine.",
                kCommandEpilog);
  flags.Positional(&positional, "JOB", "the Job, text (.pbtxt) or binary");
  flags.Custom("output", "PLAN",
               "write the plan there (.pbtxt text, .pb binary) and print a "
               "JSON line of what it holds; -o PLAN for short. Without it "
               "the plan goes to stdout",
               [&out_path](const std::string& v) -> std::string {
                 if (v.empty()) return "-o needs a file name";
                 out_path = ResolvePath(v);
                 return "";
               });
  flags.Bool("dot", &dot, "print the plan's graph instead (Graphviz)");
  // -o PLAN and -o=PLAN are --output's short form.
  std::vector<std::string> spelled;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "-o") {
      if (i + 1 >= args.size()) return UsageError("-o needs a file name");
      spelled.push_back("--output=" + args[++i]);
    } else if (absl::StartsWith(args[i], "-o=")) {
      spelled.push_back("--output=" + args[i].substr(3));
    } else {
      spelled.push_back(args[i]);
    }
  }
  if (std::optional<int> done = ParseCommand(spelled, positional, &flags)) {
    return *done;
  }
  const std::string job_path = positional.empty() ? "" : positional[0];
  if (job_path.empty()) return UsageError("compile: missing JOB");
  const bool binary =
      absl::EndsWith(out_path, ".pb") || absl::EndsWith(out_path, ".bin");
  if (!out_path.empty() && !binary && !absl::EndsWith(out_path, ".pbtxt") &&
      !absl::EndsWith(out_path, ".textproto") &&
      !absl::EndsWith(out_path, ".txt")) {
    return UsageError(absl::StrCat(
        "-o ", out_path, ": name the plan .pbtxt (text) or .pb (binary)"));
  }
  absl::StatusOr<PlanOrJob> read = ReadPlanOrJob(ResolvePath(job_path));
  if (!read.ok()) return InvalidStatus(read.status());
  const Job* job = std::get_if<Job>(&*read);
  if (job == nullptr) {
    return UsageError(absl::StrCat(
        "compile: ", job_path,
        " holds a Plan, not a Job: run, validate or dot it as it is"));
  }
  JobCompileOptions options;
  options.probe = [](int) { return absl::OkStatus(); };
  absl::StatusOr<CompiledJob> compiled = CompileJob(*job, options);
  if (!compiled.ok()) return InvalidStatus(compiled.status());
  std::string text;
  if (binary) {
    compiled->plan.SerializeToString(&text);
  } else {
    google::protobuf::TextFormat::PrintToString(compiled->plan, &text);
    text = absl::StrCat("# Compiled from ", job_path,
                        " by `actorflow compile`.\n", text);
  }
  if (dot) {
    CompileOptions check;
    check.probe = options.probe;
    check.multi_machine = true;
    absl::StatusOr<std::unique_ptr<CompiledPlan>> plan =
        CompilePlan(compiled->plan, check);
    if (!plan.ok()) return InvalidStatus(plan.status());
    std::fputs(PlanToDot(**plan).c_str(), stdout);
  } else if (out_path.empty()) {
    std::fputs(text.c_str(), stdout);
  }
  if (out_path.empty()) return kExitOk;
  std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
  if (!(out << text) || !out.flush()) {
    return UsageError(absl::StrCat("-o: cannot write ", out_path, ": ",
                                   std::strerror(errno)));
  }
  const JobCompileReport& r = compiled->report;
  for (const std::string& line : r.signatures) {
    std::fprintf(stderr, "signatures %s\n", line.c_str());
  }
  for (const std::string& line : r.inserted) {
    std::fprintf(stderr, "inserted %s\n", line.c_str());
  }
  if (!dot) {
    PrintJsonLine({{"status", "ok"},
                   {"plan", out_path},
                   {"ops", r.ops},
                   {"tasks", r.tasks},
                   {"copies", r.copies},
                   {"boxing", r.boxing},
                   {"streams", r.streams},
                   {"register_bytes", r.register_bytes},
                   {"shared_blocks", r.shared_blocks},
                   {"shared_registers", r.shared_registers},
                   {"bytes_saved", r.bytes_saved}});
  }
  return kExitOk;
}

// Reports a failure after the plan was accepted: `what` and the message on
// stderr, the JSON error line on stdout (`fields`, such as the rank, between
// the status and the error).
int RunFailed(const char* what, const absl::Status& status,
              const Json& fields = Json::object()) {
  std::fprintf(stderr, "actorflow: %s%s\n", what,
               std::string(status.message()).c_str());
  Json line = StatusLine("error", fields);
  line["error"] = std::string(status.message());
  PrintJsonLine(line);
  return kExitRunFailed;
}

struct RunFlags {
  int64_t pieces = -1;
  int64_t max_register_bytes = kDefaultMaxRegisterBytes;
  std::string trace_path;
  bool stats = false;
  bool check_memory_sharing = false;
  int cpus = 0;  // --cpus; 0: the process's usable CPUs
  StreamSharing sharing = StreamSharing::kAuto;
  double timeout_s = 0;
  double stall_s = 0;
  enum class Progress { kAuto, kOn, kOff } progress = Progress::kAuto;
  bool progress_on = false;   // --progress
  bool progress_off = false;  // --no-progress
  // Where this process stands in a multi-machine job (world_size 1: alone).
  net::JobConfig job;
  // Checkpoints.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool resume = false;
  int keep_last = 0;
  bool checkpoints() const { return !checkpoint_dir.empty(); }
};

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
    done += n;
    absl::Status saved = checkpoint();
    if (!saved.ok()) return saved;
  }
  return all;
}

std::string Millis(int64_t ns) {
  return absl::StrFormat("%.3f", static_cast<double>(ns) / 1e6);
}

Json JsonMillis(int64_t ns) {
  return JsonRounded(static_cast<double>(ns) / 1e6, 3);
}

// The --stats lines about the session's CPUs and threads, and their JSON
// object (the stats' "runtime" entry).
Json ReportRuntime(const ThreadPlacement& placement) {
  const UsableCpus& cpus = placement.cpus;
  std::fprintf(stderr, "usable CPUs: %s\n", cpus.ToString().c_str());
  std::fprintf(stderr,
               "threads: %d for %d streams (%d CPU streams on %d, sharing: "
               "%s)\n",
               placement.threads, placement.streams, placement.cpu_streams,
               placement.cpu_threads, placement.sharing.c_str());
  return {{"usable_cpus", cpus.count},
          {"cpus_from", cpus.source},
          {"affinity_cpus", cpus.affinity},
          {"online_cpus", cpus.online},
          {"cgroup_quota_cpus", JsonRounded(cpus.quota, 3)},
          {"busy_elsewhere", cpus.busy_elsewhere},
          {"streams", placement.streams},
          {"threads", placement.threads},
          {"cpu_streams", placement.cpu_streams},
          {"cpu_threads", placement.cpu_threads},
          {"sharing", placement.sharing}};
}

// The --stats table on stderr and its JSON object.
Json ReportStats(const RunStats& run) {
  size_t width = 4;
  for (const auto& [name, task] : run.tasks)
    width = std::max(width, name.size());
  std::fprintf(stderr, "%-*s %10s %12s %16s %17s\n", static_cast<int>(width),
               "task", "acts", "busy ms", "blocked in ms", "blocked out ms");
  Json json = Json::object();
  for (const auto& [name, task] : run.tasks) {
    std::fprintf(
        stderr, "%-*s %10lld %12s %16s %17s\n", static_cast<int>(width),
        name.c_str(), static_cast<long long>(task.acts),
        Millis(task.busy_ns).c_str(), Millis(task.input_wait_ns).c_str(),
        Millis(task.output_wait_ns).c_str());
    json[name] = {{"acts", task.acts},
                  {"busy_ms", JsonMillis(task.busy_ns)},
                  {"blocked_on_inputs_ms", JsonMillis(task.input_wait_ns)},
                  {"blocked_on_outputs_ms", JsonMillis(task.output_wait_ns)}};
  }
  return json;
}

// Runs `run` on `session` (with the progress line) and prints the result:
// the JSON line, with `fields` ("rank", ...) after the status.
int RunSession(const std::string& path, Session* session, const RunFlags& flags,
               const Json& fields,
               const std::function<absl::StatusOr<RunStats>()>& run,
               const std::function<absl::Status()>& after = nullptr,
               const RunTrace* trace = nullptr) {
  const std::string& trace_path = flags.trace_path;
  std::optional<ProgressLine> progress;
  const bool terminal = isatty(STDERR_FILENO) == 1;
  if (session != nullptr &&
      (flags.progress == RunFlags::Progress::kOn ||
       (flags.progress == RunFlags::Progress::kAuto && terminal))) {
    const bool forced = flags.progress == RunFlags::Progress::kOn;
    progress.emplace(session, stderr, terminal, forced ? 0.0 : 1.0,
                     /*final_line=*/forced);
    progress->Start();
  }
  absl::StatusOr<RunStats> result = run();
  if (progress) progress->Stop();
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
  if (!trace_path.empty() && session != nullptr) {
    absl::Status written = WriteChromeTrace(
        trace != nullptr ? *trace : session->trace(), trace_path);
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
  Json line = StatusLine("ok", fields);
  line["pieces"] = result->pieces;
  line["wall_ms"] = JsonRounded(result->wall_ms, 3);
  line["sinks"] = std::move(sinks);
  if (flags.stats) {
    line["stats"] = ReportStats(*result);
    if (session != nullptr) {
      line["stats"]["runtime"] = ReportRuntime(session->threads());
    }
  }
  PrintJsonLine(line);
  return kExitOk;
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
// every rank.
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
  absl::StatusOr<std::unique_ptr<net::Job>> job =
      net::Job::Create(plan, pieces, job_config, std::move(options));
  if (!job.ok()) {
    if (absl::IsInvalidArgument(job.status())) {
      return InvalidStatus(job.status());
    }
    return RunFailed("", job.status(), prefix);
  }
  if (!flags.checkpoints()) {
    return RunSession(
        path, (*job)->session(), flags, prefix,
        [&] { return (*job)->Run(pieces); }, [&] { return (*job)->Finish(); });
  }
  net::Job* running = job->get();
  const int64_t start = std::max<int64_t>(running->resumed_from(), 0);
  if (flags.resume) {
    ReportResume(flags.checkpoint_dir, start, running->config().rank);
    prefix["resumed_from"] = start;
  }
  if (start > pieces) {
    return RunFailed("", PastTheEnd(start, pieces), prefix);
  }
  RunTrace trace;
  return RunSession(
      path, running->session(), flags, prefix,
      [&] {
        return RunInChunks(
            start, pieces, flags.checkpoint_every, running->session(),
            [&](int64_t n) { return running->Run(n); },
            [&] { return running->Checkpoint(flags.keep_last).status(); },
            flags.trace_path.empty() ? nullptr : &trace);
      },
      [&] { return running->Finish(); }, &trace);
}

// One compile (each kernel's Init runs once), one run.
int Run(const std::string& path, const RunFlags& flags) {
  const std::string& trace_path = flags.trace_path;
  absl::StatusOr<Plan> loaded = Load(path);
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
  SessionOptions options;
  options.trace = !trace_path.empty();
  options.stats = flags.stats;
  options.check_memory_sharing = flags.check_memory_sharing;
  options.usable_cpus = flags.cpus;
  options.stream_sharing = flags.sharing;
  options.max_register_bytes = flags.max_register_bytes;
  options.timeout = absl::Seconds(flags.timeout_s);
  options.stall = absl::Seconds(flags.stall_s);
  if (options.trace && !std::ofstream(trace_path, std::ios::app)) {
    // Found out before the run, not after it.
    return UsageError(absl::StrCat("--trace: cannot write ", trace_path, ": ",
                                   std::strerror(errno)));
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
    return RunSession(path, session->get(), flags, Json::object(),
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
  return RunSession(
      path, running, flags, resumed, [&]() -> absl::StatusOr<RunStats> {
        absl::StatusOr<RunStats> stats = RunWithCheckpoints(
            running, start, total, flags.checkpoint_every, &writer);
        absl::Status flushed = writer.Flush();
        if (stats.ok() && !flushed.ok()) return flushed;
        return stats;
      });
}

int ListKernels() {
  const KernelRegistry& registry = KernelRegistry::Get();
  std::set<std::string> ops;
  for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kGpu}) {
    for (const std::string& op : registry.op_types(device)) ops.insert(op);
  }
  for (const std::string& op : ops) {
    std::string devices;
    for (DeviceKind device : {DeviceKind::kCpu, DeviceKind::kGpu}) {
      if (registry.Has(op, device)) {
        absl::StrAppend(&devices, " ", DeviceKindName(device));
      }
    }
    std::printf("%s%s\n", op.c_str(), devices.c_str());
  }
  return kExitOk;
}

// "4096", "64K", "512M", "16G" (binary units).
bool ParseBytes(std::string text, int64_t* bytes) {
  int shift = 0;
  if (!text.empty()) {
    switch (text.back()) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        break;
    }
    if (shift != 0) text.pop_back();
  }
  int64_t count = 0;
  if (!absl::SimpleAtoi(text, &count) || count <= 0 ||
      count > (INT64_MAX >> shift)) {
    return false;
  }
  *bytes = count << shift;
  return true;
}

// One --rank/--world-size/... flag into `job`; the problem, or "".
std::string ParseJobFlag(const std::string& arg, net::JobConfig* job) {
  const size_t eq = arg.find('=');
  const std::string name = arg.substr(0, eq);
  const std::string value = arg.substr(eq + 1);
  if (name == "--master-addr" || name == "--host") {
    if (value.empty()) return absl::StrCat(name, " needs a host");
    (name == "--host" ? job->host : job->master_addr) = value;
    return "";
  }
  if (name == "--peer-timeout" || name == "--join-timeout") {
    double seconds = 0;
    if (!absl::SimpleAtod(value, &seconds) || !(seconds > 0) || seconds > 1e6) {
      return absl::StrCat(name, " needs a number of seconds > 0, got '", value,
                          "'");
    }
    (name == "--peer-timeout" ? job->peer_timeout : job->join_timeout) =
        absl::Seconds(seconds);
    return "";
  }
  int64_t number = 0;
  const bool parsed = absl::SimpleAtoi(value, &number);
  if (name == "--rank") {
    if (!parsed || number < 0) {
      return absl::StrCat("--rank needs a whole number >= 0, got '", value,
                          "'");
    }
    job->rank = static_cast<int32_t>(number);
  } else if (name == "--world-size") {
    if (!parsed || number < 1 || number > 65536) {
      return absl::StrCat(
          "--world-size needs a number of processes >= 1, got '", value, "'");
    }
    job->world_size = static_cast<int32_t>(number);
  } else {  // --master-port
    if (!parsed || number < 1 || number > 65535) {
      return absl::StrCat("--master-port needs a port in 1..65535, got '",
                          value, "'");
    }
    job->master_port = static_cast<int32_t>(number);
  }
  return "";
}

// The flags of run, validate and dot, declared once: parsed into `run`
// (and `shapes`), and shown by `actorflow COMMAND --help`.
std::string CommandUsage(const std::string& command) {
  return absl::StrCat("actorflow ", command, " PLAN [flags]");
}
std::string CommandAbout(const std::string& command) {
  return command == "run"
             ? "Runs PLAN; the last line on stdout is a JSON summary with "
               "one entry per checksum task."
         : command == "validate"
             ? "Prints every problem in PLAN (exit 0: none)."
             : "Prints PLAN as a Graphviz digraph on stdout.";
}

void DeclareCommandFlags(const std::string& command, RunFlags* run,
                         bool* shapes, std::vector<std::string>* positional,
                         FlagSet* set) {
  FlagSet& flags = *set;
  const bool is_run = command == "run";
  flags.Positional(positional, "PLAN",
                   "a Plan or a Job, text (.pbtxt) or binary (.pb)");
  if (is_run) {
    flags.Custom("pieces", "N", "pieces to run (default: the plan's)",
                 [run](const std::string& v) -> std::string {
                   if (!absl::SimpleAtoi(v, &run->pieces) || run->pieces < 0) {
                     return absl::StrCat(
                         "--pieces needs a whole number >= 0, got '", v, "'");
                   }
                   return "";
                 });
    flags.Custom("trace", "FILE", "write every act as a Chrome trace",
                 [run](const std::string& v) -> std::string {
                   if (v.empty()) return "--trace needs a file name";
                   run->trace_path = ResolvePath(v);
                   return "";
                 });
    flags.Bool("stats", &run->stats,
               "a table per task on stderr (acts, busy, blocked on inputs, "
               "blocked on outputs), and \"stats\" in the JSON line");
    flags.Bool("check-memory-sharing", &run->check_memory_sharing,
               "check the registers that share memory as the plan runs");
    flags.Custom("cpus", "N",
                 "CPUs the run may keep busy (default: the affinity mask, "
                 "fewer under a cgroup quota, or ACTORFLOW_CPUS)",
                 [run](const std::string& v) -> std::string {
                   if (!absl::SimpleAtoi(v, &run->cpus) || run->cpus < 1) {
                     return absl::StrCat(
                         "--cpus needs a whole number >= 1, got '", v, "'");
                   }
                   return "";
                 });
    flags.Custom("sharing", "MODE",
                 "how CPU streams beyond the usable CPUs share threads: "
                 "auto, consecutive or any_thread",
                 [run](const std::string& v) -> std::string {
                   if (v == "auto") {
                     run->sharing = StreamSharing::kAuto;
                   } else if (v == "consecutive") {
                     run->sharing = StreamSharing::kConsecutive;
                   } else if (v == "any_thread") {
                     run->sharing = StreamSharing::kAnyThread;
                   } else {
                     return absl::StrCat(
                         "--sharing is auto, consecutive or any_thread, "
                         "got '",
                         v, "'");
                   }
                   return "";
                 });
    // Both take seconds; each writes its own field.
    struct Seconds {
      const char* name;
      const char* help;
      double* value;
    };
    for (const Seconds& flag : {
             Seconds{"timeout", "fail a run that takes longer than S seconds",
                     &run->timeout_s},
             Seconds{"stall", "fail a run in which no task acts for S seconds",
                     &run->stall_s},
         }) {
      flags.Custom(flag.name, "S", flag.help,
                   [flag](const std::string& v) -> std::string {
                     if (!absl::SimpleAtod(v, flag.value) ||
                         !(*flag.value > 0) || *flag.value > 1e9) {
                       return absl::StrCat("--", flag.name,
                                           " needs a number of seconds > 0, "
                                           "got '",
                                           v, "'");
                     }
                     return "";
                   });
    }
  }
  if (command != "dot") {
    flags.Custom(
        "max-register-bytes", "N",
        "refuse a plan whose registers need more than N bytes (suffix K, M, "
        "G; default 16G)",
        [run](const std::string& v) -> std::string {
          if (!ParseBytes(v, &run->max_register_bytes)) {
            return absl::StrCat(
                "--max-register-bytes needs a byte count > 0 (suffix K, M or "
                "G for KiB, MiB, GiB), got '",
                v, "'");
          }
          return "";
        });
  }
  if (command == "validate") {
    flags.Bool("shapes", shapes, "also print every register's blobs");
  }
  if (!is_run) return;
  flags.Bool("progress", &run->progress_on,
             "show a progress line on stderr (default: on a terminal, once a "
             "run has taken a second)");
  flags.Bool("no-progress", &run->progress_off, "never show it");
  flags.Custom("checkpoint-dir", "DIR", "write checkpoints under DIR",
               [run](const std::string& v) -> std::string {
                 if (v.empty()) return "--checkpoint-dir needs a directory";
                 run->checkpoint_dir = ResolvePath(v);
                 return "";
               });
  flags.Custom("checkpoint-every", "N",
               "a checkpoint after every N pieces, taken as the run goes by",
               [run](const std::string& v) -> std::string {
                 if (!absl::SimpleAtoi(v, &run->checkpoint_every) ||
                     run->checkpoint_every < 1 ||
                     run->checkpoint_every > INT64_MAX / 2) {
                   return absl::StrCat(
                       "--checkpoint-every needs a whole number >= 1, got '", v,
                       "'");
                 }
                 return "";
               });
  flags.Custom("keep-last", "N",
               "keep only the newest N checkpoints (default: all)",
               [run](const std::string& v) -> std::string {
                 if (!absl::SimpleAtoi(v, &run->keep_last) ||
                     run->keep_last < 1 || run->keep_last > 1000000) {
                   return absl::StrCat(
                       "--keep-last needs a whole number >= 1, got '", v, "'");
                 }
                 return "";
               });
  flags.Bool("resume", &run->resume,
             "start from the newest checkpoint in --checkpoint-dir");
  // A multi-machine job's place of this process (the environment's
  // RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT unless given).
  struct JobFlag {
    const char* name;
    const char* meta;
    const char* help;
  };
  for (const JobFlag& job_flag : std::initializer_list<JobFlag>{
           {"rank", "R", "this process's rank, 0..N-1 (overrides RANK)"},
           {"world-size", "N", "processes in the job (overrides WORLD_SIZE)"},
           {"master-addr", "HOST",
            "where rank 0 serves the job's control service (overrides "
            "MASTER_ADDR; default 127.0.0.1)"},
           {"master-port", "PORT",
            "its port (overrides MASTER_PORT; default 29500)"},
           {"host", "HOST", "the address other ranks reach this one at"},
           {"peer-timeout", "S",
            "a rank silent this long is dead: every rank fails, naming it "
            "(default 30)"},
           {"join-timeout", "S",
            "how long rank 0 waits for every rank to join (default 60)"}}) {
    const std::string name = job_flag.name;
    flags.Custom(
        name, job_flag.meta, job_flag.help, [name, run](const std::string& v) {
          return ParseJobFlag(absl::StrCat("--", name, "=", v), &run->job);
        });
  }
}

// actorflow launch --nproc=N PLAN [run flags]: the flags are run's, checked
// here once before any rank starts, and passed on to every rank but those
// launch sets itself (the ranks' places and where rank 0 serves).
int LaunchCommand(const std::vector<std::string>& args,
                  const std::vector<std::string>& libraries) {
  RunFlags run;
  bool shapes = false;
  int64_t nproc = 0;
  std::vector<std::string> positional;
  FlagSet flags("actorflow launch --nproc=N PLAN [run flags]",
                "Starts N processes of `actorflow run PLAN` on this machine "
                "as ranks 0..N-1 of one job, waits for all of them and "
                "prints one JSON line for the job (the sinks of every rank). "
                "A rank that fails stops the others. Takes every flag of "
                "run.",
                kCommandEpilog);
  flags.Custom(
      "nproc", "N", "processes to start, 1..1024 (required)",
      [&nproc](const std::string& v) -> std::string {
        if (!absl::SimpleAtoi(v, &nproc) || nproc < 1 || nproc > 1024) {
          return absl::StrCat(
              "--nproc needs a number of processes in 1..1024, got '", v, "'");
        }
        return "";
      });
  DeclareCommandFlags("run", &run, &shapes, &positional, &flags);
  if (std::optional<int> done = ParseCommand(args, positional, &flags)) {
    return *done;
  }
  for (const char* own : {"rank", "world-size"}) {
    if (flags.given(own)) {
      return UsageError(absl::StrCat("launch: --", own,
                                     " is launch's to set (--nproc says how "
                                     "many)"));
    }
  }
  if (!flags.given("nproc")) return UsageError("launch: missing --nproc=N");
  if (positional.empty()) return UsageError("launch: missing PLAN");
  net::LaunchOptions options;
  options.nproc = static_cast<int>(nproc);
  if (flags.given("master-port")) options.master_port = run.job.master_port;
  if (flags.given("master-addr")) options.master_addr = run.job.master_addr;
  if (flags.given("peer-timeout")) options.peer_timeout = run.job.peer_timeout;
  options.run_args.push_back(ResolvePath(positional[0]));
  for (const std::string& arg : flags.given_args()) {
    // launch sets these for every rank.
    if (absl::StartsWith(arg, "--nproc=") ||
        absl::StartsWith(arg, "--master-")) {
      continue;
    }
    options.run_args.push_back(arg);
  }
  for (const std::string& library : libraries) {
    options.run_args.push_back("--load=" + library);
  }
  return net::Launch(options);
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return UsageError("missing command");
  }
  const std::string command = args[0];
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  // --load=LIB, any command, any position: loaded before anything looks a
  // kernel up. launch passes them on to its ranks (made absolute).
  std::vector<std::string> libraries;
  for (auto it = args.begin() + 1; it != args.end();) {
    if (*it != "--load" && !absl::StartsWith(*it, "--load=")) {
      ++it;
      continue;
    }
    if (*it == "--load" || *it == "--load=") {
      return UsageError("--load needs a kernel library: --load=PATH.so");
    }
    const std::string library = KernelLibraryPath(it->substr(7));
    absl::Status loaded = LoadKernelLibrary(library);
    if (!loaded.ok()) return UsageError(std::string(loaded.message()));
    libraries.push_back(library);
    it = args.erase(it);
  }
  if (command == "kernels") {
    return ListKernels();
  }
  if (command == "launch") return LaunchCommand(args, libraries);
  if (command == "compile") return Compile(args);
  if (command != "run" && command != "validate" && command != "dot") {
    return UsageError(absl::StrCat("unknown command '", command, "'"));
  }
  std::string plan_path;
  RunFlags run;
  bool shapes = false;
  if (command == "run") {
    absl::StatusOr<net::JobConfig> job = net::JobConfigFromEnv();
    if (!job.ok()) return UsageError(std::string(job.status().message()));
    run.job = *job;
  }
  std::vector<std::string> positional;
  FlagSet flags(CommandUsage(command), CommandAbout(command), kCommandEpilog);
  DeclareCommandFlags(command, &run, &shapes, &positional, &flags);
  if (std::optional<int> done = ParseCommand(args, positional, &flags)) {
    return *done;
  }
  if (positional.empty()) {
    return UsageError(absl::StrCat(command, ": missing PLAN"));
  }
  plan_path = positional[0];
  if (run.progress_off) {
    run.progress = RunFlags::Progress::kOff;
  } else if (run.progress_on) {
    run.progress = RunFlags::Progress::kOn;
  }
  if (!run.checkpoints() &&
      (run.resume || run.checkpoint_every > 0 || run.keep_last > 0)) {
    return UsageError(absl::StrCat(run.resume          ? "--resume"
                                   : run.keep_last > 0 ? "--keep-last"
                                                       : "--checkpoint-every",
                                   " needs --checkpoint-dir=DIR"));
  }
  run.job.checkpoint_dir = run.checkpoint_dir;
  run.job.resume = run.resume;
  if (run.job.rank >= run.job.world_size) {
    return UsageError(absl::StrCat("rank ", run.job.rank, " is outside 0..",
                                   run.job.world_size - 1, " (world size ",
                                   run.job.world_size, ")"));
  }
  if (command == "dot") return Dot(plan_path);
  return command == "run" ? Run(plan_path, run)
                          : Validate(plan_path, shapes, run.max_register_bytes);
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) {
  // Before anything uses gRPC (see UseOwnPollers).
  actorflow::net::UseOwnPollers();
  return actorflow::Main(argc, argv);
}
