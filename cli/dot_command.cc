// `actorflow dot PLAN`: the plan as a Graphviz digraph.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/compiled_plan.h"
#include "actorflow/plan_validator.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "plan/plan_dot.h"

namespace actorflow::internal::cli {
namespace {

class DotCommand : public Command {
 public:
  DotCommand()
      : Command("actorflow dot PLAN",
                "Prints PLAN as a Graphviz digraph on stdout: tasks boxed by "
                "stream, edges labelled with regst id, register_num and blob "
                "shapes, an initial register dashed. Render it with "
                "`... | dot -Tsvg`. The graph needs the inferred shapes, so an "
                "invalid plan gets its problems (exit 2) and no graph.") {
    TakesPlanOperand();
  }

  int Run(const std::vector<std::string>&) override {
    if (operands_.empty()) return UsageError("dot: missing PLAN");
    absl::StatusOr<Plan> loaded = LoadPlanArg(operands_[0]);
    if (!loaded.ok()) return InvalidStatus(loaded.status());
    absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
        CompilePlan(std::move(*loaded));
    if (!compiled.ok()) return InvalidStatus(compiled.status());
    std::fputs(PlanToDot(**compiled).c_str(), stdout);
    return kExitOk;
  }
};

}  // namespace

std::unique_ptr<Command> MakeDotCommand() {
  return std::make_unique<DotCommand>();
}

}  // namespace actorflow::internal::cli
