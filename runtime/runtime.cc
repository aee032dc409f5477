#include "runtime/runtime.h"

#include <memory>
#include <utility>

#include "actorflow/session.h"

namespace actorflow::internal {

absl::StatusOr<RunResult> RunPlan(const Plan& plan, const RunOptions& options) {
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(plan, SessionOptions(options));
  if (!session.ok()) return session.status();
  absl::StatusOr<RunStats> stats = (*session)->Run(options.pieces);
  if (!stats.ok()) return stats.status();
  RunResult result;
  static_cast<RunStats&>(result) = *std::move(stats);
  result.sinks = (*session)->Sinks();
  if (options.trace) result.trace = (*session)->trace();
  return result;
}

}  // namespace actorflow::internal
