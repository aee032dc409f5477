// The `actorflow` command: run or validate a Plan.
//
// This file holds main(). A runner for custom kernels links it with the
// kernels' library (see examples/custom_kernel/).
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "actor/kernel.h"
#include "runtime/chrome_trace.h"
#include "runtime/compiled_plan.h"
#include "runtime/json.h"
#include "runtime/plan_dot.h"
#include "runtime/plan_loader.h"
#include "runtime/plan_util.h"
#include "runtime/session.h"

namespace actorflow {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRunFailed = 1;
constexpr int kExitInvalid = 2;

constexpr char kUsage[] =
    R"(actorflow: run a dataflow Plan as actors on polling threads.

usage:
  actorflow run PLAN [--pieces=N] [--trace=FILE]
                                    run PLAN; the last line on stdout is a
                                    JSON summary with one entry per checksum
                                    task (pieces, checksum, in_order).
                                    --trace writes when every act ran, as a
                                    Chrome trace (chrome://tracing or
                                    ui.perfetto.dev): one row per task.
                                    Plans with feed or fetch tasks need a
                                    program to feed them (runtime/session.h)
  actorflow validate PLAN [--shapes]
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

int Validate(const std::string& path, bool shapes) {
  absl::StatusOr<Plan> loaded = LoadPlan(ResolvePath(path));
  if (!loaded.ok()) return Invalid({std::string(loaded.status().message())});
  absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
      CompilePlan(std::move(*loaded));
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

// One compile (each kernel's Init runs once), one run.
int Run(const std::string& path, int64_t pieces,
        const std::string& trace_path) {
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
  absl::StatusOr<RunStats> result = (*session)->Run(pieces);
  if (!result.ok()) return RunFailed("run failed: ", result.status());
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
  std::fprintf(stderr, "actorflow: %s: %lld pieces, %lld acts in %.3f ms\n",
               path.c_str(), static_cast<long long>(result->pieces),
               static_cast<long long>(result->acts), result->wall_ms);
  std::printf(
      "{\"status\":\"ok\",\"pieces\":%lld,\"wall_ms\":%.3f,\"sinks\":{%s}}\n",
      static_cast<long long>(result->pieces), result->wall_ms,
      absl::StrJoin(sinks, ",").c_str());
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
  std::string trace_path;
  int64_t pieces = -1;
  bool shapes = false;
  for (size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h") {
      std::fputs(kUsage, stdout);
      return kExitOk;
    }
    if (command == "run" && absl::StartsWith(arg, "--pieces=")) {
      if (!absl::SimpleAtoi(arg.substr(9), &pieces) || pieces < 0) {
        return UsageError(absl::StrCat(
            "--pieces needs a whole number >= 0, got '", arg.substr(9), "'"));
      }
    } else if (command == "run" && absl::StartsWith(arg, "--trace=")) {
      trace_path = ResolvePath(arg.substr(8));
      if (arg.size() == 8) {
        return UsageError("--trace needs a file name");
      }
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
  return command == "run" ? Run(plan_path, pieces, trace_path)
                          : Validate(plan_path, shapes);
}

}  // namespace
}  // namespace actorflow

int main(int argc, char** argv) { return actorflow::Main(argc, argv); }
