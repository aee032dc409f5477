// `actorflow validate PLAN`: every problem of a plan, or ok.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/compiled_plan.h"
#include "actorflow/plan_validator.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/run_flags.h"

namespace actorflow::internal::cli {
namespace {

class ValidateCommand : public Command {
 public:
  ValidateCommand()
      : Command("actorflow validate PLAN [--shapes] [flags]",
                "Prints every problem in PLAN, each naming its task, regst "
                "id or field (exit 0: none), as the run would find them "
                "before it starts.") {
    TakesPlanOperand();
    flags().Bool("shapes", &shapes_,
                 "also print every register's blobs, inferred or stated");
    DeclareRegisterLimit(&max_register_bytes_, &flags());
  }

  int Run(const std::vector<std::string>&) override {
    if (operands_.empty()) return UsageError("validate: missing PLAN");
    const std::string& path = operands_[0];
    absl::StatusOr<Plan> loaded = LoadPlanArg(path);
    if (!loaded.ok()) return InvalidStatus(loaded.status());
    CompileOptions options;
    options.max_register_bytes = max_register_bytes_;
    absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
        CompilePlan(std::move(*loaded), options);
    if (!compiled.ok()) return InvalidStatus(compiled.status());
    const int tasks = (*compiled)->plan.task_size();
    if (shapes_) std::fputs(DescribeShapes(**compiled).c_str(), stdout);
    std::fprintf(stderr, "%s: ok (%d tasks)\n", path.c_str(), tasks);
    PrintJsonLine({{"status", "ok"}, {"tasks", tasks}});
    return kExitOk;
  }

 private:
  bool shapes_ = false;
  int64_t max_register_bytes_ = kDefaultMaxRegisterBytes;
};

}  // namespace

std::unique_ptr<Command> MakeValidateCommand() {
  return std::make_unique<ValidateCommand>();
}

}  // namespace actorflow::internal::cli
