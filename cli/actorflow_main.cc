// The `actorflow` command's main: loads the kernel libraries --load names,
// then hands the command line to the command the dispatch table names
// (cli/commands.h). `actorflow help` is made from the commands' own flag
// declarations. A runner for custom kernels links this with the kernels'
// library (see examples/custom_kernel/).
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "actorflow/kernel_library.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "net/transport.h"

namespace actorflow::internal::cli {
namespace {

// Above and below the list of commands in `actorflow help`.
constexpr char kOverview[] =
    "actorflow: run a dataflow Plan as actors on polling threads.\n"
    "\n"
    "usage: actorflow COMMAND [flags]; `actorflow help COMMAND` (or "
    "`actorflow\n"
    "COMMAND --help`) lists that command's flags.\n";

constexpr char kEveryCommand[] =
    "Every command takes --load=LIB.so (repeatable): a kernel library built\n"
    "outside actorflow (examples/plugin), loaded before the plan is read, so "
    "that\n"
    "its op_types run like the built-in ones. A bare name is a file in the\n"
    "current directory, else searched as dlopen searches. A library that "
    "cannot\n"
    "be loaded, was built against another kernel ABI, registers an op_type\n"
    "already registered, or registers no kernel is an error (exit 2) naming "
    "it.\n"
    "\n"
    "PLAN is a text-format (.pbtxt) or binary (.pb) actorflow.Plan (see\n"
    "proto/plan.proto), or a Job (its first field is `op`), compiled as it "
    "loads.\n"
    "Relative paths resolve against the directory you ran `bazel run` from.\n"
    "\n"
    "Exit codes: 0 ok, 1 the run failed (the message names the task and "
    "piece), 2\n"
    "invalid plan or arguments.\n";

const CommandEntry* FindCommand(const std::string& name) {
  for (const CommandEntry& entry : Commands()) {
    if (name == entry.name) return &entry;
  }
  return nullptr;
}

// The list of commands, each by its usage line and summary; with `at_length`
// every command's whole --help after it.
std::string Help(bool at_length) {
  std::string out = absl::StrCat(kOverview, "\ncommands:\n");
  for (const CommandEntry& entry : Commands()) {
    absl::StrAppend(&out, "  ", entry.make()->flags().usage(), "\n      ",
                    entry.summary, "\n");
  }
  absl::StrAppend(&out,
                  "  actorflow help [COMMAND]\n      this text, or "
                  "COMMAND's flags\n\n",
                  kEveryCommand);
  if (at_length) {
    for (const CommandEntry& entry : Commands()) {
      absl::StrAppend(&out, "\n", entry.make()->flags().Help());
    }
  }
  return out;
}

int HelpCommand(const std::vector<std::string>& args) {
  if (args.size() < 2) {
    std::fputs(Help(/*at_length=*/true).c_str(), stdout);
    return kExitOk;
  }
  const CommandEntry* entry = FindCommand(args[1]);
  if (entry == nullptr) {
    return UsageError(absl::StrCat("help: unknown command '", args[1], "'"));
  }
  std::fputs(entry->make()->flags().Help().c_str(), stdout);
  return kExitOk;
}

int Main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) {
    std::fputs(Help(/*at_length=*/false).c_str(), stderr);
    return UsageError("missing command");
  }
  const std::string command = args[0];
  if (command == "help" || command == "--help" || command == "-h") {
    return HelpCommand(args);
  }
  const CommandEntry* entry = FindCommand(command);
  if (entry == nullptr) {
    return UsageError(absl::StrCat("unknown command '", command, "'"));
  }
  // --load=LIB, any position: loaded before anything looks a kernel up.
  // launch passes them on to its ranks (made absolute).
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
  return entry->make()->Main(args, libraries);
}

}  // namespace

}  // namespace actorflow::internal::cli

int main(int argc, char** argv) {
  // Before anything uses gRPC (see UseOwnPollers).
  actorflow::internal::net::UseOwnPollers();
  return actorflow::internal::cli::Main(argc, argv);
}
