#include "runtime/chrome_trace.h"

#include <cerrno>
#include <cstring>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/json.h"

namespace actorflow {
namespace {

std::string Micros(int64_t ns, int64_t origin_ns) {
  return absl::StrFormat("%.3f", static_cast<double>(ns - origin_ns) / 1e3);
}

}  // namespace

std::string ChromeTraceJson(const RunTrace& trace) {
  std::string out = "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[";
  bool first = true;
  auto add = [&](const std::string& event) {
    if (!first) out += ",\n";
    first = false;
    out += event;
  };
  int64_t async_id = 0;
  for (size_t t = 0; t < trace.tasks.size(); ++t) {
    const RunTrace::Task& task = trace.tasks[t];
    std::string row =
        JsonString(absl::StrCat(task.name, " [", task.stream, "]"));
    add(absl::StrCat(
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":", t,
        ",\"args\":{\"name\":", row, "}}"));
    add(absl::StrCat(
        "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":", t,
        ",\"args\":{\"sort_index\":", t, "}}"));
    std::string common = absl::StrCat("\"cat\":", JsonString(task.stream),
                                      ",\"pid\":0,\"tid\":", t);
    for (const ActSpan& span : task.spans) {
      std::string name = absl::StrCat("\"name\":\"piece ", span.piece, "\"");
      if (!task.async) {
        add(absl::StrCat("{", name, ",", common, ",\"ph\":\"X\",\"ts\":",
                         Micros(span.begin_ns, trace.origin_ns),
                         ",\"dur\":", Micros(span.end_ns, span.begin_ns), "}"));
        continue;
      }
      ++async_id;
      add(absl::StrCat(
          "{", name, ",", common, ",\"ph\":\"b\",\"id\":", async_id,
          ",\"ts\":", Micros(span.begin_ns, trace.origin_ns), "}"));
      add(absl::StrCat("{", name, ",", common,
                       ",\"ph\":\"e\",\"id\":", async_id,
                       ",\"ts\":", Micros(span.end_ns, trace.origin_ns), "}"));
    }
  }
  out += "]}\n";
  return out;
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

}  // namespace actorflow
