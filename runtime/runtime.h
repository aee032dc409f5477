#ifndef ACTORFLOW_RUNTIME_RUNTIME_H_
#define ACTORFLOW_RUNTIME_RUNTIME_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "actorflow/kernel.h"
#include "actorflow/run_trace.h"
#include "actorflow/session.h"
#include "proto/plan.pb.h"

namespace actorflow::internal {

// A session's options (trace, stats, limits, kernels, ...) and how far to
// run it.
struct RunOptions : SessionOptions {
  // Pieces each source produces; < 0 takes the plan's total_piece_num.
  int64_t pieces = -1;
};

// The run's stats, and what a session offers between runs.
struct RunResult : RunStats {
  std::map<std::string, SinkSummary> sinks;  // by task name
  RunTrace trace;                            // empty unless RunOptions::trace
};

// Runs `plan` once, to completion: a Session (actorflow/session.h) created,
// run for options.pieces and destroyed. Every thread is joined before it
// returns, on every path. To run a plan more than once, or to feed and
// fetch, use a Session.
//
// Errors: InvalidArgument listing every validation problem; a kernel's
// failure as "task 'name' (task_id N) failed at piece P: ...", after the
// run has wound down (sources stop, everything in flight drains).
absl::StatusOr<RunResult> RunPlan(const Plan& plan,
                                  const RunOptions& options = {});

}  // namespace actorflow::internal

#endif  // ACTORFLOW_RUNTIME_RUNTIME_H_
