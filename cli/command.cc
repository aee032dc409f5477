#include "cli/command.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "compiler/plan_or_job.h"

namespace actorflow::internal::cli {
namespace {

// Under every command's --help.
constexpr char kCommandEpilog[] =
    "Every command also takes --load=LIB.so (repeatable): a kernel library "
    "loaded before the plan is read. `actorflow help` lists every command. "
    "Exit codes: 0 ok, 1 the run failed, 2 invalid plan or arguments.";

}  // namespace

Command::Command(std::string usage, std::string about)
    : flags_(std::move(usage), std::move(about), kCommandEpilog) {}

void Command::TakesOperand(const std::string& meta, const std::string& help) {
  flags_.Positional(&operands_, meta, help);
}

void Command::TakesPlanOperand() {
  TakesOperand("PLAN", "a Plan or a Job, text (.pbtxt) or binary (.pb)");
}

int Command::Main(const std::vector<std::string>& args,
                  const std::vector<std::string>& libraries) {
  absl::Status parsed = flags_.Parse(Respell(args));
  if (flags_.help_requested()) {
    std::fputs(flags_.Help().c_str(), stdout);
    return kExitOk;
  }
  if (!parsed.ok()) return UsageError(std::string(parsed.message()));
  if (operands_.size() > 1) {
    return UsageError(absl::StrCat("unexpected argument '", operands_[1], "'"));
  }
  return Run(libraries);
}

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

int UsageError(const std::string& message) {
  const int status = Invalid({message});
  std::fputs("(actorflow help for usage)\n", stderr);
  return status;
}

int InvalidStatus(const absl::Status& status) {
  return Invalid(absl::StrSplit(status.message(), '\n'));
}

std::string ResolvePath(const std::string& path) {
  const char* cwd = std::getenv("BUILD_WORKING_DIRECTORY");
  if (path.empty() || path[0] == '/' || cwd == nullptr || *cwd == '\0') {
    return path;
  }
  return absl::StrCat(cwd, "/", path);
}

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

absl::StatusOr<Plan> LoadPlanArg(const std::string& path) {
  absl::StatusOr<LoadedPlan> loaded = LoadPlanOrJob(ResolvePath(path));
  if (!loaded.ok()) return loaded.status();
  return std::move(loaded->plan);
}

}  // namespace actorflow::internal::cli
