#include "diagnosis/chrome_trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "base/json.h"
#include "diagnosis/trace_events.h"

namespace actorflow::internal {
namespace {

Json Micros(int64_t ns, int64_t origin_ns) {
  return JsonRounded(static_cast<double>(ns - origin_ns) / 1e3, 3);
}

}  // namespace

std::string ChromeTraceJson(const RunTrace& trace) {
  TraceEvents events;
  int64_t async_id = 0;
  for (size_t t = 0; t < trace.tasks.size(); ++t) {
    const RunTrace::Task& task = trace.tasks[t];
    const int64_t row = static_cast<int64_t>(t);
    events.NameRow(0, row, absl::StrCat(task.name, " [", task.stream, "]"));
    events.SortRow(0, row, row);
    for (const ActSpan& span : task.spans) {
      Json event = {{"name", absl::StrCat("piece ", span.piece)},
                    {"cat", task.stream},
                    {"pid", 0},
                    {"tid", t}};
      if (!task.async) {
        event["ph"] = "X";
        event["ts"] = Micros(span.begin_ns, trace.origin_ns);
        event["dur"] = Micros(span.end_ns, span.begin_ns);
        events.Add(std::move(event));
        continue;
      }
      ++async_id;
      event["ph"] = "b";
      event["id"] = async_id;
      event["ts"] = Micros(span.begin_ns, trace.origin_ns);
      events.Add(event);
      event["ph"] = "e";
      event["ts"] = Micros(span.end_ns, trace.origin_ns);
      events.Add(std::move(event));
    }
  }
  return events.Document();
}

absl::Status WriteChromeTrace(const RunTrace& trace, const std::string& path) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trace: cannot write ", path, ": ", std::strerror(errno)));
  }
  file << ChromeTraceJson(trace);
  file.close();
  if (!file) {
    return absl::InternalError(
        absl::StrCat("--trace: writing ", path, " failed"));
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal
