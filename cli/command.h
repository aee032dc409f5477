#ifndef ACTORFLOW_CLI_COMMAND_H_
#define ACTORFLOW_CLI_COMMAND_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/json.h"
#include "cli/flags.h"
#include "net/launch.h"
#include "proto/plan.pb.h"

namespace actorflow::internal::cli {

// The exit statuses of every command: the run failed (the message names the
// task and piece) or the plan or arguments were invalid.
inline constexpr int kExitOk = 0;
inline constexpr int kExitRunFailed = 1;
inline constexpr int kExitInvalid = 2;
// A job stopped by SIGTERM/SIGUSR1 at an agreed cut (checkpointed there
// with --checkpoint-dir): resume it with --resume.
inline constexpr int kExitPreempted = net::kExitPreempted;

// One command of `actorflow` (run, validate, ...). Its constructor declares
// its flags on flags(), once: they parse the command line and make its
// --help, and `actorflow help` lists the command by them. Run() runs after
// the flags parsed.
class Command {
 public:
  virtual ~Command() = default;
  Command(const Command&) = delete;
  Command& operator=(const Command&) = delete;

  FlagSet& flags() { return flags_; }
  // The command line as the user typed it (args[0]: the command) in the
  // spelling flags() parses; compile's `-o PLAN` becomes `--output=PLAN`.
  virtual std::vector<std::string> Respell(std::vector<std::string> args) {
    return args;
  }
  // `libraries`: the kernel libraries --load loaded (absolute paths), which
  // launch passes on to its ranks.
  virtual int Run(const std::vector<std::string>& libraries) = 0;

  // Parses `args` and runs: --help prints the command's help, a bad flag or
  // operand is a usage error (exit 2).
  int Main(const std::vector<std::string>& args,
           const std::vector<std::string>& libraries);

 protected:
  // `usage`: the first line of its --help; `about`: what it does.
  Command(std::string usage, std::string about);
  // The operands (non-flag arguments) go to operands_, at most one: `meta`
  // names it in --help.
  void TakesOperand(const std::string& meta, const std::string& help);
  // The operand is PLAN: a Plan or a Job, text or binary.
  void TakesPlanOperand();

  std::vector<std::string> operands_;

 private:
  FlagSet flags_;
};

// The problems, each on stderr as "error: ..." and together in the JSON
// line; returns kExitInvalid.
int Invalid(const std::vector<std::string>& problems);
// `message` as Invalid does, then where the usage is.
int UsageError(const std::string& message);
// An InvalidArgument from loading or compiling: one problem per line.
int InvalidStatus(const absl::Status& status);
// {"status": status, then `fields` in their order}.
Json StatusLine(const char* status, const Json& fields);

// `path` as the user meant it: under `bazel run` the process starts in the
// runfiles tree, and a relative path is relative to where they typed the
// command (BUILD_WORKING_DIRECTORY).
std::string ResolvePath(const std::string& path);
// --load's library: a path with a slash, absolute; a bare name is a file in
// the caller's directory if one is there, else dlopen's to search for
// (LD_LIBRARY_PATH, the system's directories).
std::string KernelLibraryPath(const std::string& given);
// The plan at `path` (a Job compiled to one). Errors: one problem per line.
absl::StatusOr<Plan> LoadPlanArg(const std::string& path);

}  // namespace actorflow::internal::cli

#endif  // ACTORFLOW_CLI_COMMAND_H_
