#ifndef ACTORFLOW_CLI_COMMANDS_H_
#define ACTORFLOW_CLI_COMMANDS_H_

#include <memory>
#include <vector>

#include "cli/command.h"

namespace actorflow::internal::cli {

// The commands of `actorflow`, each in its own file (cli/<name>_command.cc).
std::unique_ptr<Command> MakeRunCommand();
std::unique_ptr<Command> MakeLaunchCommand();
std::unique_ptr<Command> MakeValidateCommand();
std::unique_ptr<Command> MakeDotCommand();
std::unique_ptr<Command> MakeCompileCommand();
std::unique_ptr<Command> MakeKernelsCommand();

// The dispatch table: `actorflow NAME ...` runs make()'s command, and
// `actorflow help` lists them in this order with `summary`.
struct CommandEntry {
  const char* name;
  const char* summary;
  std::unique_ptr<Command> (*make)();
};
const std::vector<CommandEntry>& Commands();

}  // namespace actorflow::internal::cli

#endif  // ACTORFLOW_CLI_COMMANDS_H_
