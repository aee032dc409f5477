#ifndef ACTORFLOW_DIAGNOSIS_HANG_REPORT_H_
#define ACTORFLOW_DIAGNOSIS_HANG_REPORT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "actorflow/actor_stats.h"
#include "proto/plan.pb.h"

namespace actorflow::internal {

// What the session saw when a run hit its deadline or stalled, per task in
// plan order.
struct HangFacts {
  // Why the run was stopped, e.g. "no act for 2 s (--stall)"; empty: the
  // report has no header line.
  std::string reason;
  // The task's snapshot, or nothing when its thread did not answer in
  // time (it is busy: usually a kernel that does not return).
  std::vector<std::optional<ActorSnapshot>> snapshots;
  // How long the task's kernel has been running on its thread: -1 none,
  // 0 under way for an unknown time.
  std::vector<int64_t> kernel_running_ns;
  // Each task's stream, as StreamKey::ToString writes it.
  std::vector<std::string> streams;
};

// The report: one line per task that has not finished, saying what it
// waits for and who holds it (its producer; the consumers that have not
// read or returned its registers), which kernels are running and for how
// long, which tasks did not answer and why, and any cycle of waits (tasks
// each waiting on the next: a cycle that no initial register breaks).
std::string HangReport(const Plan& plan, const HangFacts& facts);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_DIAGNOSIS_HANG_REPORT_H_
