#include "diagnosis/stage_shares.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

std::string StageOf(const std::string& task) {
  const size_t at = task.rfind('@');
  return at == std::string::npos ? task : task.substr(0, at);
}

int Percent(double fraction) {
  return static_cast<int>(std::lround(100 * fraction));
}

std::map<std::string, StageShares> SharesByStage(
    const std::map<std::string, TaskStats>& before,
    const std::map<std::string, TaskStats>& after, int64_t window_ns) {
  const double window = static_cast<double>(std::max<int64_t>(window_ns, 1));
  std::map<std::string, StageShares> stages;
  for (const auto& [task, now] : after) {
    TaskStats then;
    if (auto found = before.find(task); found != before.end()) {
      then = found->second;
    }
    StageShares& stage = stages[StageOf(task)];
    stage.threads += 1;
    stage.acts += now.acts - then.acts;
    const double busy = (now.busy_ns - then.busy_ns) / window;
    stage.busy += busy;
    stage.starved += (now.input_wait_ns - then.input_wait_ns) / window;
    stage.back_pressured += (now.output_wait_ns - then.output_wait_ns) / window;
    if (busy >= 0.5) ++stage.busy_threads;
    stage.register_bytes += now.register_bytes;
  }
  for (auto& [name, stage] : stages) {
    stage.busy /= stage.threads;
    stage.starved /= stage.threads;
    stage.back_pressured /= stage.threads;
  }
  return stages;
}

std::string BusiestStage(const std::map<std::string, StageShares>& stages) {
  const StageShares* busiest = nullptr;
  std::string name;
  for (const auto& [stage_name, stage] : stages) {
    if (busiest == nullptr || stage.busy > busiest->busy) {
      busiest = &stage;
      name = stage_name;
    }
  }
  if (busiest == nullptr) return "";
  return absl::StrCat(name, ", ", busiest->busy_threads, " of ",
                      busiest->threads,
                      busiest->threads == 1 ? " thread" : " threads", " busy ",
                      Percent(busiest->busy), " %");
}

}  // namespace actorflow::internal
