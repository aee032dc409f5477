#ifndef ACTORFLOW_DIAGNOSIS_CHROME_TRACE_H_
#define ACTORFLOW_DIAGNOSIS_CHROME_TRACE_H_

#include <string>

#include "absl/status/status.h"
#include "actorflow/run_trace.h"

namespace actorflow::internal {

// `trace` in the Chrome trace event format (JSON), for chrome://tracing or
// ui.perfetto.dev: one row per task, named "task [stream]", one slice per
// act named by its piece, times in microseconds from the sources' start.
// Acts on CPU streams are complete events; acts on asynchronous streams
// (which overlap when register_num > 1) are async begin/end pairs, so
// copies on one stream visibly overlap kernels on another.
std::string ChromeTraceJson(const RunTrace& trace);

// Writes ChromeTraceJson(trace) to `path`; the error names the path.
absl::Status WriteChromeTrace(const RunTrace& trace, const std::string& path);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_DIAGNOSIS_CHROME_TRACE_H_
