#include "runtime/runtime.h"

#include <memory>
#include <utility>

#include "runtime/session.h"

namespace actorflow {

absl::StatusOr<RunResult> RunPlan(const Plan& plan, const RunOptions& options) {
  SessionOptions session_options;
  session_options.channel = options.channel;
  session_options.trace = options.trace;
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(plan, std::move(session_options));
  if (!session.ok()) return session.status();
  absl::StatusOr<RunStats> stats = (*session)->Run(options.pieces);
  if (!stats.ok()) return stats.status();
  RunResult result;
  result.pieces = stats->pieces;
  result.wall_ms = stats->wall_ms;
  result.acts = stats->acts;
  result.sinks = (*session)->Sinks();
  if (options.trace) result.trace = (*session)->trace();
  return result;
}

}  // namespace actorflow
