#include "pipeline/stall_report.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace actorflow::internal::pipeline {
namespace {

// "decode+crop@1" -> "decode+crop"; names without a worker stay.
std::string StageOf(const std::string& task) {
  const size_t at = task.rfind('@');
  return at == std::string::npos ? task : task.substr(0, at);
}

int Percent(double fraction) {
  return static_cast<int>(std::lround(100 * fraction));
}

}  // namespace

PipelineStalls ReportStalls(const std::map<std::string, TaskStats>& before,
                            const std::map<std::string, TaskStats>& after,
                            int64_t window_ns, int64_t batches, int64_t samples,
                            int64_t caller_wait_ns) {
  PipelineStalls report;
  const double window = static_cast<double>(std::max<int64_t>(window_ns, 1));
  report.window_ms = window / 1e6;
  report.batches = batches;
  report.batches_per_s = batches / (window / 1e9);
  report.samples_per_s = samples / (window / 1e9);
  report.caller_wait = std::min(1.0, caller_wait_ns / window);
  // Each task's share of the window, summed per stage (averaged below).
  std::map<std::string, std::vector<double>> busy_of;
  for (const auto& [task, now] : after) {
    TaskStats then;
    if (auto found = before.find(task); found != before.end()) {
      then = found->second;
    }
    StageStalls& stage = report.stages[StageOf(task)];
    stage.threads += 1;
    stage.acts += now.acts - then.acts;
    const double busy = (now.busy_ns - then.busy_ns) / window;
    stage.busy += busy;
    stage.starved += (now.input_wait_ns - then.input_wait_ns) / window;
    stage.back_pressured += (now.output_wait_ns - then.output_wait_ns) / window;
    busy_of[StageOf(task)].push_back(busy);
  }
  const StageStalls* busiest = nullptr;
  std::string busiest_name;
  for (auto& [name, stage] : report.stages) {
    stage.busy /= stage.threads;
    stage.starved /= stage.threads;
    stage.back_pressured /= stage.threads;
    if (busiest == nullptr || stage.busy > busiest->busy) {
      busiest = &stage;
      busiest_name = name;
    }
  }
  if (batches == 0 && caller_wait_ns == 0) {
    report.verdict = "no batch was asked for in the window";
  } else if (report.caller_wait < 0.05 || busiest == nullptr) {
    report.verdict =
        absl::StrCat("input is not the bottleneck: the caller waited ",
                     Percent(report.caller_wait), " % of the time");
  } else {
    const std::vector<double>& threads = busy_of[busiest_name];
    const int64_t busy_threads = std::count_if(
        threads.begin(), threads.end(), [](double b) { return b >= 0.5; });
    report.verdict = absl::StrCat("input-bound ", Percent(report.caller_wait),
                                  " %: ", busiest_name, ", ", busy_threads,
                                  " of ", threads.size(),
                                  threads.size() == 1 ? " thread" : " threads",
                                  " busy ", Percent(busiest->busy), " %");
  }
  return report;
}

}  // namespace actorflow::internal::pipeline
