#include "engine/profiler.h"

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/json.h"
#include "diagnosis/trace_events.h"

namespace actorflow::engine {
namespace {

double Micros(int64_t ns) { return static_cast<double>(ns) / 1e3; }

// The row of a GPU worker's device time: slices placed at the host start
// (the device cannot start earlier), as long as the device took.
std::string DeviceRow(const OprRecord& r) {
  return absl::StrCat(r.worker, " device");
}

std::string VarLabel(const OprRecord::Dependency& dep) {
  return dep.var_name.empty() ? absl::StrCat("var ", dep.var) : dep.var_name;
}

}  // namespace

void Profiler::Add(OprRecord record) {
  internal::MutexLock lock(&mu_);
  records_.push_back(std::move(record));
}

std::vector<OprRecord> Profiler::Records() const {
  std::vector<OprRecord> records;
  {
    internal::MutexLock lock(&mu_);
    records = records_;
  }
  std::sort(
      records.begin(), records.end(),
      [](const OprRecord& a, const OprRecord& b) { return a.seq < b.seq; });
  return records;
}

void Profiler::Clear() {
  internal::MutexLock lock(&mu_);
  records_.clear();
}

std::string Profiler::ChromeTrace() const {
  const std::vector<OprRecord> records = Records();
  // Rows: workers, numbered in the order they first ran something.
  std::map<std::string, int> rows;
  std::vector<std::string> row_names;
  std::map<uint64_t, const OprRecord*> by_seq;
  for (const OprRecord& r : records) {
    if (rows.emplace(r.worker, static_cast<int>(rows.size()) + 1).second) {
      row_names.push_back(r.worker);
    }
    if (r.device_ns >= 0 &&
        rows.emplace(DeviceRow(r), static_cast<int>(rows.size()) + 1).second) {
      row_names.push_back(DeviceRow(r));
    }
    by_seq[r.seq] = &r;
  }
  internal::TraceEvents events;
  events.NameProcess(1, "actorflow engine");
  for (const std::string& name : row_names) {
    events.NameRow(1, rows[name], name);
  }
  int flow = 0;
  for (const OprRecord& r : records) {
    const int tid = rows[r.worker];
    internal::Json reads = internal::Json::array(),
                   writes = internal::Json::array(),
                   waits = internal::Json::object();
    for (const OprRecord::Dependency& dep : r.deps) {
      (dep.write ? writes : reads).push_back(VarLabel(dep));
      waits[VarLabel(dep)] = Micros(dep.wait_ns);
    }
    const int64_t start = r.started_ns > 0 ? r.started_ns : r.finished_ns;
    internal::Json args = {{"seq", r.seq},
                           {"ctx", r.ctx.ToString()},
                           {"queued_us", Micros(r.queued_ns)},
                           {"ready_us", Micros(r.ready_ns)}};
    if (r.device_ns >= 0) args["device_us"] = Micros(r.device_ns);
    args["reads"] = std::move(reads);
    args["writes"] = std::move(writes);
    args["wait_us"] = std::move(waits);
    args["status"] = r.status.ok() ? "ok" : std::string(r.status.message());
    events.Add({{"name", r.name},
                {"cat", FnPropertyName(r.prop)},
                {"ph", "X"},
                {"pid", 1},
                {"tid", tid},
                {"ts", Micros(start)},
                {"dur", Micros(r.finished_ns - start)},
                {"args", std::move(args)}});
    if (r.device_ns >= 0) {
      events.Add({{"name", r.name},
                  {"cat", "device"},
                  {"ph", "X"},
                  {"pid", 1},
                  {"tid", rows[DeviceRow(r)]},
                  {"ts", Micros(start)},
                  {"dur", Micros(r.device_ns)},
                  {"args", {{"seq", r.seq}}}});
    }
    // An arrow from the operation whose completion granted a variable to
    // this one, when both are here and both ran.
    for (const OprRecord::Dependency& dep : r.deps) {
      auto from = by_seq.find(static_cast<uint64_t>(dep.after));
      if (dep.after < 0 || from == by_seq.end() || r.started_ns == 0 ||
          from->second->started_ns == 0) {
        continue;
      }
      const OprRecord& a = *from->second;
      ++flow;
      // Inside the granting slice, so the viewer binds the arrow to it.
      const int64_t at = std::max(a.started_ns, a.finished_ns - 1);
      events.Add({{"name", VarLabel(dep)},
                  {"cat", "dependency"},
                  {"ph", "s"},
                  {"id", flow},
                  {"pid", 1},
                  {"tid", rows[a.worker]},
                  {"ts", Micros(at)}});
      events.Add({{"name", VarLabel(dep)},
                  {"cat", "dependency"},
                  {"ph", "f"},
                  {"bp", "e"},
                  {"id", flow},
                  {"pid", 1},
                  {"tid", tid},
                  {"ts", Micros(r.started_ns)}});
    }
  }
  return events.Document();
}

std::string Profiler::Table() const {
  struct Row {
    int64_t count = 0, total = 0, max = 0, wait = 0;
    int64_t device = -1;  // -1: no operation of this name timed a device
  };
  std::map<std::string, Row> rows;
  for (const OprRecord& r : Records()) {
    Row& row = rows[r.name];
    const int64_t ran = r.started_ns > 0 ? r.finished_ns - r.started_ns : 0;
    ++row.count;
    row.total += ran;
    row.max = std::max(row.max, ran);
    row.wait += r.ready_ns - r.queued_ns;
    if (r.device_ns >= 0)
      row.device = std::max<int64_t>(row.device, 0) + r.device_ns;
  }
  std::vector<std::pair<std::string, Row>> sorted(rows.begin(), rows.end());
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const auto& a, const auto& b) {
                     return a.second.total > b.second.total;
                   });
  std::string out =
      absl::StrFormat("%-32s %8s %12s %10s %10s %12s %12s\n", "name", "count",
                      "total_us", "mean_us", "max_us", "wait_us", "device_us");
  for (const auto& [name, row] : sorted) {
    absl::StrAppendFormat(
        &out, "%-32s %8d %12.1f %10.2f %10.1f %12.1f %12s\n", name, row.count,
        row.total / 1e3, row.total / 1e3 / static_cast<double>(row.count),
        row.max / 1e3, row.wait / 1e3,
        row.device < 0 ? std::string("-")
                       : absl::StrFormat("%.1f", row.device / 1e3));
  }
  return out;
}

}  // namespace actorflow::engine
