#ifndef ACTORFLOW_DIAGNOSIS_TRACE_EVENTS_H_
#define ACTORFLOW_DIAGNOSIS_TRACE_EVENTS_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/json.h"

namespace actorflow::internal {

// The one writer of Chrome traces (chrome://tracing, ui.perfetto.dev) here:
// a run's acts (chrome_trace.h) and the dependency engine's operations
// (engine/profiler.h) are both built as TraceEvents. Events are kept in the
// order added; times are microseconds, shown as nanoseconds. Not
// thread-safe: one builder per trace.
class TraceEvents {
 public:
  // Metadata: the name of process `pid`, of its row (thread) `tid`, and
  // where that row sorts.
  void NameProcess(int64_t pid, const std::string& name);
  void NameRow(int64_t pid, int64_t tid, const std::string& name);
  void SortRow(int64_t pid, int64_t tid, int64_t index);
  // Any other event, as the format spells it ("ph", "ts", ...).
  void Add(Json event) { events_.push_back(std::move(event)); }

  // The trace: one event per line, so that it also reads and diffs as
  // text.
  std::string Document() const;

 private:
  std::vector<Json> events_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_DIAGNOSIS_TRACE_EVENTS_H_
