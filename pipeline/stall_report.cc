#include "pipeline/stall_report.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "diagnosis/stage_shares.h"

namespace actorflow::internal::pipeline {

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
  const std::map<std::string, StageShares> shares =
      SharesByStage(before, after, window_ns);
  for (const auto& [name, share] : shares) {
    StageStalls& stage = report.stages[name];
    stage.threads = share.threads;
    stage.acts = share.acts;
    // Each act of a stage is one chunk of a batch's size (the window's
    // batches tell how many samples that is).
    if (batches > 0) {
      stage.samples_per_s = share.acts *
                            (static_cast<double>(samples) / batches) /
                            (window / 1e9);
    }
    stage.busy = share.busy;
    stage.starved = share.starved;
    stage.back_pressured = share.back_pressured;
    stage.register_bytes = share.register_bytes;
  }
  if (batches == 0 && caller_wait_ns == 0) {
    report.verdict = "no batch was asked for in the window";
  } else if (report.caller_wait < 0.05 || shares.empty()) {
    report.verdict =
        absl::StrCat("input is not the bottleneck: the caller waited ",
                     Percent(report.caller_wait), " % of the time");
  } else {
    report.verdict = absl::StrCat("input-bound ", Percent(report.caller_wait),
                                  " %: ", BusiestStage(shares));
  }
  return report;
}

}  // namespace actorflow::internal::pipeline
