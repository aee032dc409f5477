#ifndef ACTORFLOW_CLI_RUN_REPORT_H_
#define ACTORFLOW_CLI_RUN_REPORT_H_

#include "actorflow/session.h"
#include "base/json.h"
#include "net/job.h"

namespace actorflow::internal::cli {

// run --stats: a table per task on stderr (acts, busy, blocked on inputs and
// on outputs), returned as the JSON line's "stats" object keyed by task.
Json ReportStats(const RunStats& run);
// run --stats: what the session found of its CPUs and how its streams share
// threads, on stderr, returned as the "runtime" entry of "stats".
Json ReportRuntime(const ThreadPlacement& placement);
// run --stats in a job: how long this rank waited to join, at the barrier
// after it and at the last one, and what the process holds at the end
// (threads, peak resident memory), on stderr, returned as the "job" entry.
Json ReportControl(const net::ControlTimes& times);

}  // namespace actorflow::internal::cli

#endif  // ACTORFLOW_CLI_RUN_REPORT_H_
