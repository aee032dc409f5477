#include "cli/stall_line.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "diagnosis/stage_shares.h"

namespace actorflow::internal::cli {
namespace {

// 2048 -> "2.0 KiB".
std::string HumanBytes(int64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return unit == 0 ? absl::StrCat(bytes, " B")
                   : absl::StrFormat("%.1f %s", value, units[unit]);
}

}  // namespace

std::vector<std::string> LastTaskNames(const Plan& plan) {
  std::set<int64_t> read;
  for (const TaskProto& task : plan.task()) {
    for (const auto& [name, desc] : task.produced_regst_desc()) {
      if (desc.consumer_task_id_size() > 0) read.insert(task.task_id());
    }
  }
  std::vector<std::string> last;
  for (const TaskProto& task : plan.task()) {
    if (read.count(task.task_id()) == 0) last.push_back(task.name());
  }
  return last;
}

StallLine::StallLine(const Session* session,
                     std::vector<std::string> last_tasks, double every_s,
                     std::FILE* out)
    : session_(session),
      last_tasks_(std::move(last_tasks)),
      every_s_(every_s),
      out_(out) {}

void StallLine::Start() {
  if (every_s_ > 0) thread_ = std::thread([this] { Loop(); });
}

void StallLine::Stop() {
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  wake_.SignalAll();
  if (!thread_.joinable()) return;
  thread_.join();
  Show();  // the last window
}

double StallLine::LastTasksWait(const std::map<std::string, TaskStats>& before,
                                const std::map<std::string, TaskStats>& after,
                                int64_t window_ns) const {
  double sum = 0;
  int found = 0;
  for (const std::string& name : last_tasks_) {
    auto now = after.find(name);
    if (now == after.end()) continue;  // on another rank
    TaskStats then;
    if (auto was = before.find(name); was != before.end()) then = was->second;
    sum += now->second.input_wait_ns - then.input_wait_ns;
    ++found;
  }
  if (found == 0) return -1;
  return std::min(1.0, sum / found / std::max<double>(window_ns, 1));
}

std::string StallLine::Verdict(const std::map<std::string, TaskStats>& before,
                               const std::map<std::string, TaskStats>& after,
                               int64_t window_ns, double last_wait) {
  const std::string busiest =
      BusiestStage(SharesByStage(before, after, window_ns));
  if (busiest.empty()) return "no task acted";
  if (last_wait < 0) return absl::StrCat("busiest: ", busiest);
  if (last_wait < 0.05) {
    return absl::StrCat("the last tasks are the bottleneck: they waited ",
                        Percent(last_wait), " % of the time for input");
  }
  return absl::StrCat("input-bound ", Percent(last_wait), " %: ", busiest);
}

Json StallLine::Whole(const RunStats& run) const {
  const int64_t window_ns = static_cast<int64_t>(run.wall_ms * 1e6);
  const std::map<std::string, TaskStats> none;
  const double wait = LastTasksWait(none, run.tasks, window_ns);
  Json stages = Json::object();
  for (const auto& [name, share] : SharesByStage(none, run.tasks, window_ns)) {
    stages[name] = {{"threads", share.threads},
                    {"acts", share.acts},
                    {"busy", share.busy},
                    {"starved", share.starved},
                    {"back_pressured", share.back_pressured},
                    {"register_bytes", share.register_bytes}};
  }
  Json out = {{"verdict", Verdict(none, run.tasks, window_ns, wait)},
              {"stages", std::move(stages)}};
  if (wait >= 0) out["last_tasks_wait"] = wait;
  return out;
}

void StallLine::Show() {
  const RunProgress now = session_->Progress();
  if (now.elapsed_ms < before_ms_) {  // a new run (the next chunk)
    before_.clear();
    before_ms_ = 0;
    before_pieces_ = 0;
  }
  const double window_ms = now.elapsed_ms - before_ms_;
  if (window_ms <= 0 && now.pieces_done == before_pieces_) return;
  const int64_t window_ns = static_cast<int64_t>(window_ms * 1e6);
  const double wait = LastTasksWait(before_, now.tasks, window_ns);
  int64_t register_bytes = 0;
  for (const auto& [name, task] : now.tasks) {
    register_bytes += task.register_bytes;
  }
  std::fprintf(
      out_, "stalls %.1f-%.1f s: %.0f pieces/s; %s; registers %s\n",
      before_ms_ / 1e3, now.elapsed_ms / 1e3,
      (now.pieces_done - before_pieces_) / std::max(window_ms / 1e3, 1e-9),
      Verdict(before_, now.tasks, window_ns, wait).c_str(),
      HumanBytes(register_bytes).c_str());
  std::fflush(out_);
  before_ = now.tasks;
  before_ms_ = now.elapsed_ms;
  before_pieces_ = now.pieces_done;
}

void StallLine::Loop() {
  const auto period =
      std::chrono::microseconds(static_cast<int64_t>(every_s_ * 1e6));
  auto next = std::chrono::steady_clock::now() + period;
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!stop_ && std::chrono::steady_clock::now() < next) {
        wake_.WaitUntil(&mu_, next);
      }
      if (stop_) return;
    }
    Show();
    next += period;
  }
}

}  // namespace actorflow::internal::cli
