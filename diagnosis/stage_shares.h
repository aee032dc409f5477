#ifndef ACTORFLOW_DIAGNOSIS_STAGE_SHARES_H_
#define ACTORFLOW_DIAGNOSIS_STAGE_SHARES_H_

#include <cstdint>
#include <map>
#include <string>

#include "actorflow/actor_stats.h"

// Where a plan's time went between two snapshots of its tasks' figures
// (RunStats::tasks, RunProgress::tasks), by stage: tasks named "x@w" are
// copy w of stage "x" (one per worker thread); the others are stages of one
// task. What Pipeline::Stalls and `actorflow run --stats` report.
namespace actorflow::internal {

struct StageShares {
  int threads = 0;  // tasks of the stage
  int64_t acts = 0;
  // Shares of the window, averaged over the stage's tasks: in kernels,
  // waiting for an input, waiting for a free output register.
  double busy = 0;
  double starved = 0;
  double back_pressured = 0;
  int busy_threads = 0;  // tasks busy at least half the window
  // The stage's tasks' TaskStats::register_bytes at the window's end.
  int64_t register_bytes = 0;
};

// "decode+crop@1" -> "decode+crop"; other names stay.
std::string StageOf(const std::string& task);

std::map<std::string, StageShares> SharesByStage(
    const std::map<std::string, TaskStats>& before,
    const std::map<std::string, TaskStats>& after, int64_t window_ns);

// The stage whose tasks were busiest, as "decode, 2 of 2 threads busy 98 %"
// (how many were busy at least half the window); "" for no stage.
std::string BusiestStage(const std::map<std::string, StageShares>& stages);

// 0.384 -> 38.
int Percent(double fraction);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_DIAGNOSIS_STAGE_SHARES_H_
