#include "diagnosis/trace_events.h"

namespace actorflow::internal {

void TraceEvents::NameProcess(int64_t pid, const std::string& name) {
  Add({{"name", "process_name"},
       {"ph", "M"},
       {"pid", pid},
       {"args", {{"name", name}}}});
}

void TraceEvents::NameRow(int64_t pid, int64_t tid, const std::string& name) {
  Add({{"name", "thread_name"},
       {"ph", "M"},
       {"pid", pid},
       {"tid", tid},
       {"args", {{"name", name}}}});
}

void TraceEvents::SortRow(int64_t pid, int64_t tid, int64_t index) {
  Add({{"name", "thread_sort_index"},
       {"ph", "M"},
       {"pid", pid},
       {"tid", tid},
       {"args", {{"sort_index", index}}}});
}

std::string TraceEvents::Document() const {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  for (size_t i = 0; i < events_.size(); ++i) {
    out += JsonLine(events_[i]);
    out += i + 1 < events_.size() ? ",\n" : "\n";
  }
  out += "]}\n";
  return out;
}

}  // namespace actorflow::internal
