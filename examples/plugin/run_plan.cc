// A program outside actorflow's build that embeds a Session: it links
// libactorflow.so from the SDK, loads a kernel library, runs a plan and
// prints each sink's checksum. Built by the Makefile here:
//
//   make -C examples/plugin ACTORFLOW_SDK=/tmp/sdk run_plan
//   ./run_plan PLAN PIECES [KERNEL_LIBRARY...]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include <actorflow/plan_loader.h>
#include <actorflow/session.h>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: run_plan PLAN PIECES [KERNEL_LIBRARY...]\n");
    return 2;
  }
  absl::StatusOr<actorflow::Plan> plan = actorflow::LoadPlan(argv[1]);
  if (!plan.ok()) {
    std::fprintf(stderr, "run_plan: %s\n", plan.status().ToString().c_str());
    return 1;
  }
  actorflow::SessionOptions options;
  for (int i = 3; i < argc; ++i) options.kernel_libraries.push_back(argv[i]);
  absl::StatusOr<std::unique_ptr<actorflow::Session>> session =
      actorflow::Session::Create(*std::move(plan), std::move(options));
  if (!session.ok()) {
    std::fprintf(stderr, "run_plan: %s\n", session.status().ToString().c_str());
    return 1;
  }
  absl::StatusOr<actorflow::RunStats> stats =
      (*session)->Run(std::strtoll(argv[2], nullptr, 10));
  if (!stats.ok()) {
    std::fprintf(stderr, "run_plan: %s\n", stats.status().ToString().c_str());
    return 1;
  }
  for (const auto& [name, sink] : (*session)->Sinks()) {
    std::printf("%s %lld pieces, checksum %.17g\n", name.c_str(),
                static_cast<long long>(sink.pieces), sink.checksum);
  }
  return 0;
}
