#ifndef ACTORFLOW_PIPELINE_STALL_REPORT_H_
#define ACTORFLOW_PIPELINE_STALL_REPORT_H_

#include <cstdint>
#include <map>
#include <string>

#include "actorflow/actor_stats.h"
#include "actorflow/pipeline.h"

namespace actorflow::internal::pipeline {

// Where a pipeline's time went between two Stats() snapshots `window_ns`
// apart, in which the caller took `batches` batches of `samples` samples
// and waited `caller_wait_ns` for them. Tasks named "chain@w" are worker w's
// copy of stage "chain"; the others are stages of one thread.
//
// The verdict: the caller waiting under 5 % of the window means "input is
// not the bottleneck"; otherwise the pipeline is input-bound by that
// share, and the stage whose threads are busiest is named, with how many
// of its threads are busy at least half the time.
PipelineStalls ReportStalls(const std::map<std::string, TaskStats>& before,
                            const std::map<std::string, TaskStats>& after,
                            int64_t window_ns, int64_t batches, int64_t samples,
                            int64_t caller_wait_ns);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_STALL_REPORT_H_
