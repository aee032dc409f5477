#include "cli/commands.h"

namespace actorflow::internal::cli {

const std::vector<CommandEntry>& Commands() {
  static const std::vector<CommandEntry>* const commands =
      new std::vector<CommandEntry>{
          {"run", "run PLAN; the last stdout line is a JSON summary",
           MakeRunCommand},
          {"launch", "run a multi-machine PLAN as N local processes",
           MakeLaunchCommand},
          {"validate", "print every problem in PLAN (exit 0: none)",
           MakeValidateCommand},
          {"dot", "print PLAN as a Graphviz digraph", MakeDotCommand},
          {"compile", "compile a Job into a Plan", MakeCompileCommand},
          {"kernels", "list the kernels: \"op_type cpu gpu\" per line",
           MakeKernelsCommand},
      };
  return *commands;
}

}  // namespace actorflow::internal::cli
