#include "cli/run_report.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "absl/strings/str_format.h"

namespace actorflow::internal::cli {
namespace {

std::string Millis(int64_t ns) {
  return absl::StrFormat("%.3f", static_cast<double>(ns) / 1e6);
}

Json JsonMillis(int64_t ns) {
  return JsonRounded(static_cast<double>(ns) / 1e6, 3);
}

}  // namespace

Json ReportStats(const RunStats& run) {
  size_t width = 4;
  for (const auto& [name, task] : run.tasks) {
    width = std::max(width, name.size());
  }
  std::fprintf(stderr, "%-*s %10s %12s %16s %17s %15s\n",
               static_cast<int>(width), "task", "acts", "busy ms",
               "blocked in ms", "blocked out ms", "register bytes");
  Json json = Json::object();
  for (const auto& [name, task] : run.tasks) {
    std::fprintf(
        stderr, "%-*s %10lld %12s %16s %17s %15lld\n", static_cast<int>(width),
        name.c_str(), static_cast<long long>(task.acts),
        Millis(task.busy_ns).c_str(), Millis(task.input_wait_ns).c_str(),
        Millis(task.output_wait_ns).c_str(),
        static_cast<long long>(task.register_bytes));
    json[name] = {{"acts", task.acts},
                  {"busy_ms", JsonMillis(task.busy_ns)},
                  {"blocked_on_inputs_ms", JsonMillis(task.input_wait_ns)},
                  {"blocked_on_outputs_ms", JsonMillis(task.output_wait_ns)},
                  {"register_bytes", task.register_bytes}};
  }
  return json;
}

Json ReportRuntime(const ThreadPlacement& placement) {
  const UsableCpus& cpus = placement.cpus;
  std::fprintf(stderr, "usable CPUs: %s\n", cpus.ToString().c_str());
  const std::string short_acts =
      placement.estimated_piece_ns > 0
          ? absl::StrFormat(
                "; acts of about %.1f us a piece, too short to pay for "
                "handing pieces between threads",
                static_cast<double>(placement.estimated_piece_ns) / 1000)
          : "";
  std::fprintf(stderr,
               "threads: %d for %d streams (%d CPU streams on %d, sharing: "
               "%s%s; %d batching deliveries)\n",
               placement.threads, placement.streams, placement.cpu_streams,
               placement.cpu_threads, placement.sharing.c_str(),
               short_acts.c_str(), placement.batching_threads);
  return {{"usable_cpus", cpus.count},
          {"cpus_from", cpus.source},
          {"affinity_cpus", cpus.affinity},
          {"online_cpus", cpus.online},
          {"cgroup_quota_cpus", JsonRounded(cpus.quota, 3)},
          {"busy_elsewhere", cpus.busy_elsewhere},
          {"streams", placement.streams},
          {"threads", placement.threads},
          {"cpu_streams", placement.cpu_streams},
          {"cpu_threads", placement.cpu_threads},
          {"sharing", placement.sharing},
          {"estimated_piece_ns", placement.estimated_piece_ns},
          {"batching_threads", placement.batching_threads}};
}

Json ReportControl(const net::ControlTimes& times) {
  int threads = 0;
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) threads = std::atoi(line.c_str() + 8);
  }
  struct rusage usage {};
  getrusage(RUSAGE_SELF, &usage);
  const double rss_mb = static_cast<double>(usage.ru_maxrss) / 1024;
  std::fprintf(stderr,
               "job: join %.1f ms, ready barrier %.1f ms, end barrier %.1f "
               "ms; %d threads, peak RSS %.1f MB\n",
               times.join_ms, times.ready_ms, times.end_ms, threads, rss_mb);
  return {{"join_ms", JsonRounded(times.join_ms, 3)},
          {"ready_barrier_ms", JsonRounded(times.ready_ms, 3)},
          {"end_barrier_ms", JsonRounded(times.end_ms, 3)},
          {"threads", threads},
          {"max_rss_mb", JsonRounded(rss_mb, 1)}};
}

}  // namespace actorflow::internal::cli
