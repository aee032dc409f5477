// The `actorflow` command: run or validate a Plan.
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
#include "actor/kernel.h"
#include "runtime/chrome_trace.h"
#include "runtime/compiled_plan.h"
#include "runtime/json.h"
#include "runtime/plan_dot.h"
#include "runtime/plan_loader.h"
#include "runtime/plan_util.h"
#include "runtime/progress_line.h"
#include "runtime/session.h"

namespace actorflow {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitInvalid = 2;

constexpr char kUsage[] =
    R"(actorflow: run a dataflow Plan as actors on polling threads.

usage:
  actorflow run PLAN [--pieces=N] [--trace=FILE] [--stats]
                     [--timeout=SECONDS] [--stall=SECONDS]
                     [--progress | --no-progress]
                                    run PLAN; the last line on stdout is a
                                    JSON summary with one entry per checksum
                                    task (pieces, checksum, in_order).
                                    Plans with feed or fetch tasks need a
                                    program to feed them (runtime/session.h)
    --trace=FILE    write when every act ran, as a Chrome trace
                    (chrome://tracing or ui.perfetto.dev): a row per task
    --stats         print a table per task on stderr: acts, busy time (in
                    its kernel), time blocked on inputs (raise the
                    producer's register_num, or speed the producer up) and
                    blocked on free outputs (raise this task's
                    register_num, or speed its consumers up); the JSON line
                    gets them under "stats", keyed by task name
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
  actorflow validate PLAN [--shapes] [--max-register-bytes=N]
                                    print every problem in PLAN (exit 0:
                                    none); --shapes also prints every
                                    register's blobs, inferred or stated
  actorflow dot PLAN                print PLAN as a Graphviz digraph on
                                    stdout (tasks boxed by stream; edges
                                    labelled with regst id, register_num
                                    and blob shapes; dashed: an initial
                                    register). Render: ... | dot -Tsvg
  actorflow kernels                 list the kernels linked into this binary:
                                    one op_type per line, then the devices
                                    it has a kernel for (cpu, gpu)
  actorflow help                    this text

PLAN is a text-format (.pbtxt) or binary (.pb) actorflow.Plan; see
proto/plan.proto. Relative paths resolve against the directory you ran
`bazel run` from. --pieces=N overrides the plan's total_piece_num.

exit codes: 0 ok, 1 the run failed (the message names the task and piece),
            2 invalid plan or arguments
)";

// Under `bazel run`, the process starts in the runfiles tree; the user's
// paths are relative to where they typed the command.
std::string ResolvePath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr || *cwd == '\0') {
    return path;
  }
  return absl::StrCat(cwd, "/", path);
}

int Invalid(const std::vector<std::string>& problems) {
  std::vector<std::string> quoted;
  for (const std::string& problem : problems) {
    std::fprintf(stderr, "error: %s\n", problem.c_str());
    quoted.push_back(JsonString(problem));
  }
  std::printf("{\"status\":\"invalid\",\"errors\":[%s]}\n",
              absl::StrJoin(quoted, ",").c_str());
  return kExitInvalid;
}

int UsageError(const std::string& message) {
  std::fprintf(stderr, "actorflow: %s\n(actorflow help for usage)\n",
               message.c_str());
  return Invalid({message});
}

// An InvalidArgument from compiling holds one problem per line.
int InvalidStatus(const absl::Status& status) {
  return Invalid(absl::StrSplit(status.message(), '\n'));
}

int Validate(const std::string& path, bool shapes,
             int64_t max_register_bytes) {
  absl::StatusOr<Plan> loaded = LoadPlan(ResolvePath(path));
  if (!loaded.ok()) return Invalid({std::string(loaded.status().message())});
  CompileOptions options;
  options.max_register_bytes = max_register_bytes;
  absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
      CompilePlan(std::move(*loaded), options);
  if (!compiled.ok()) return InvalidStatus(compiled.status());
  const int tasks = (*compiled)->plan.task_size();
  if (shapes) std::fputs(DescribeShapes(**compiled).c_str(), stdout);
  std::fprintf(stderr, "%s: ok (%d tasks)\n", path.c_str(), tasks);
  std::printf("{\"status\":\"ok\",\"tasks\":%d}\n", tasks);
  return kExitOk;
}

// The graph needs the inferred shapes, so an invalid plan gets its problems
// (exit 2) and no graph.
int Dot(const std::string& path) {
  absl::StatusOr<Plan> loaded = LoadPlan(ResolvePath(path));
  if (!loaded.ok()) return Invalid({std::string(loaded.status().message())});
  absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
      CompilePlan(std::move(*loaded));
  if (!compiled.ok()) return InvalidStatus(compiled.status());
  std::fputs(PlanToDot(**compiled).c_str(), stdout);
  return kExitOk;
}

// Reports a failure after the plan was accepted: `what` and the message on
// stderr, the JSON error line on stdout.
int RunFailed(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "actorflow: %s%s\n", what,
               std::string(status.message()).c_str());
  std::printf("{\"status\":\"error\",\"error\":%s}\n",
              JsonString(status.message()).c_str());
  return kExitRunFailed;
}

struct RunFlags {
  int64_t pieces = -1;
  int64_t max_register_bytes = kDefaultMaxRegisterBytes;
  std::string trace_path;
  bool stats = false;
  double timeout_s = 0;
  double stall_s = 0;
  enum class Progress { kAuto, kOn, kOff } progress = Progress::kAuto;
};

std::string Millis(int64_t ns) {
  return absl::StrFormat("%.3f", static_cast<double>(ns) / 1e6);
}

// The --stats table on stderr and its JSON object.
std::string ReportStats(const RunStats& run) {
  size_t width = 4;
  for (const auto& [name, task] : run.tasks)
    width = std::max(width, name.size());
  std::fprintf(stderr, "%-*s %10s %12s %16s %17s\n", static_cast<int>(width),
               "task", "acts", "busy ms", "blocked in ms", "blocked out ms");
  std::vector<std::string> json;
  for (const auto& [name, task] : run.tasks) {
    std::fprintf(
        stderr, "%-*s %10lld %12s %16s %17s\n", static_cast<int>(width),
        name.c_str(), static_cast<long long>(task.acts),
        Millis(task.busy_ns).c_str(), Millis(task.input_wait_ns).c_str(),
        Millis(task.output_wait_ns).c_str());
    json.push_back(absl::StrCat(
        JsonString(name), ":{\"acts\":", task.acts,
        ",\"busy_ms\":", Millis(task.busy_ns),
        ",\"blocked_on_inputs_ms\":", Millis(task.input_wait_ns),
        ",\"blocked_on_outputs_ms\":", Millis(task.output_wait_ns), "}"));
  }
  return absl::StrCat("{", absl::StrJoin(json, ","), "}");
}

// One compile (each kernel's Init runs once), one run.
int Run(const std::string& path, const RunFlags& flags) {
  const int64_t pieces = flags.pieces;
  const std::string& trace_path = flags.trace_path;
  absl::StatusOr<Plan> loaded = LoadPlan(ResolvePath(path));
  if (!loaded.ok()) return Invalid({std::string(loaded.status().message())});
  std::vector<std::string> boundary;
  for (const TaskProto& task : loaded->task()) {
    if (IsFeed(task) || IsFetch(task)) boundary.push_back(TaskLabel(task));
  }
  if (!boundary.empty()) {
    return Invalid({absl::StrCat(
        absl::StrJoin(boundary, ", "),
        ": feed and fetch tasks connect a plan to a program; run this plan "
        "through a Session (runtime/session.h), not the command")});
  }
  SessionOptions options;
  options.trace = !trace_path.empty();
  options.stats = flags.stats;
  options.max_register_bytes = flags.max_register_bytes;
  options.timeout = absl::Seconds(flags.timeout_s);
  options.stall = absl::Seconds(flags.stall_s);
  if (options.trace && !std::ofstream(trace_path, std::ios::app)) {
    // Found out before the run, not after it.
    return UsageError(absl::StrCat("--trace: cannot write ", trace_path, ": ",
                                   std::strerror(errno)));
  }
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(std::move(*loaded), std::move(options));
  if (!session.ok()) {
    if (absl::IsInvalidArgument(session.status())) {
      return InvalidStatus(session.status());
    }
    return RunFailed("", session.status());
  }
  std::optional<ProgressLine> progress;
  const bool terminal = isatty(STDERR_FILENO) == 1;
  if (flags.progress == RunFlags::Progress::kOn ||
      (flags.progress == RunFlags::Progress::kAuto && terminal)) {
    const bool forced = flags.progress == RunFlags::Progress::kOn;
    progress.emplace(session->get(), stderr, terminal, forced ? 0.0 : 1.0,
                     /*final_line=*/forced);
    progress->Start();
  }
  absl::StatusOr<RunStats> result = (*session)->Run(pieces);
  if (progress) progress->Stop();
  if (!result.ok()) {
    int code = RunFailed("run failed: ", result.status());
    if ((*session)->left_threads_running()) {
      // A thread is still inside a kernel: leave without static destructors.
      std::fflush(nullptr);
      std::_Exit(code);
    }
    return code;
  }
  if (!trace_path.empty()) {
    absl::Status written = WriteChromeTrace((*session)->trace(), trace_path);
    if (!written.ok()) return RunFailed("", written);
  }
  std::vector<std::string> sinks;
  for (const auto& [name, sink] : (*session)->Sinks()) {
    sinks.push_back(
        absl::StrCat(JsonString(name), ":{\"pieces\":", sink.pieces,
                     ",\"checksum\":", JsonNumber(sink.checksum),
                     ",\"in_order\":", sink.in_order ? "true" : "false", "}"));
  }
  std::string stats;
  if (flags.stats) stats = absl::StrCat(",\"stats\":", ReportStats(*result));
  std::fprintf(stderr, "actorflow: %s: %lld pieces, %lld acts in %.3f ms\n",
               path.c_str(), static_cast<long long>(result->pieces),
               static_cast<long long>(result->acts), result->wall_ms);
  std::printf(
      "{\"status\":\"ok\",\"pieces\":%lld,\"wall_ms\":%.3f,\"sinks\":{%s}%s}"
      "\n",
      static_cast<long long>(result->pieces), result->wall_ms,
      absl::StrJoin(sinks, ",").c_str(), stats.c_str());
  return kExitOk;
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
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      default: break;
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
  if (command == "kernels") {
    return ListKernels();
  }
  if (command != "run" && command != "validate" && command != "dot") {
    return UsageError(absl::StrCat("unknown command '", command, "'"));
  }
  std::string plan_path;
  RunFlags run;
  bool shapes = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (command == "run" && absl::StartsWith(arg, "--pieces=")) {
      if (!absl::SimpleAtoi(arg.substr(9), &run.pieces) || run.pieces < 0) {
        return UsageError(absl::StrCat(
            "--pieces needs a whole number >= 0, got '", arg.substr(9), "'"));
      }
    } else if (command == "run" && absl::StartsWith(arg, "--trace=")) {
      run.trace_path = ResolvePath(arg.substr(8));
      if (arg.size() == 8) {
        return UsageError("--trace needs a file name");
      }
    } else if (command != "dot" &&
               absl::StartsWith(arg, "--max-register-bytes=")) {
      const std::string value = arg.substr(21);
      if (!ParseBytes(value, &run.max_register_bytes)) {
        return UsageError(absl::StrCat(
            "--max-register-bytes needs a byte count > 0 (suffix K, M or G "
            "for KiB, MiB, GiB), got '",
            value, "'"));
      }
    } else if (command == "run" && arg == "--stats") {
      run.stats = true;
    } else if (command == "run" && (absl::StartsWith(arg, "--timeout=") ||
                                    absl::StartsWith(arg, "--stall="))) {
      const size_t eq = arg.find('=');
      const std::string value = arg.substr(eq + 1);
      double seconds = 0;
      if (!absl::SimpleAtod(value, &seconds) || !(seconds > 0) ||
          seconds > 1e9) {
        return UsageError(absl::StrCat(arg.substr(0, eq),
                                       " needs a number of seconds > 0, got '",
                                       value, "'"));
      }
      (arg[2] == 't' ? run.timeout_s : run.stall_s) = seconds;
    } else if (command == "run" && arg == "--progress") {
      run.progress = RunFlags::Progress::kOn;
    } else if (command == "run" && arg == "--no-progress") {
      run.progress = RunFlags::Progress::kOff;
    } else if (command == "validate" && arg == "--shapes") {
      shapes = true;
    } else if (absl::StartsWith(arg, "-")) {
      return UsageError(
          absl::StrCat("unknown option '", arg, "' for ", command));
    } else if (plan_path.empty()) {
      plan_path = arg;
    } else {
      return UsageError(absl::StrCat("unexpected argument '", arg, "'"));
    }
  }
  if (plan_path.empty()) {
    return UsageError(absl::StrCat(command, ": missing PLAN"));
  }
  if (command == "dot") return Dot(plan_path);
  return command == "run"
             ? Run(plan_path, run)
             : Validate(plan_path, shapes, run.max_register_bytes);
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) { return actorflow::Main(argc, argv); }
