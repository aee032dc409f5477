#ifndef ACTORFLOW_CLI_STALL_LINE_H_
#define ACTORFLOW_CLI_STALL_LINE_H_

#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "actorflow/session.h"
#include "base/json.h"
#include "base/mutex.h"

namespace actorflow::internal::cli {

// `actorflow run --stats`: where a run stalled, by stage, and one verdict
// line. The plan's last tasks (those whose outputs nobody reads) stand for
// the caller a pipeline has: the share of the time they waited for input
// is how much the plan's end was held up, and the busiest stage is what
// held it up:
//   input-bound 38 %: decode, 2 of 2 threads busy 98 %
//   the last tasks are the bottleneck: they waited 2 % of the time for input
// With `every_s` > 0, a line on stderr for each window of that many seconds
// while the run goes on (its thread lives between Start and Stop, and is
// joined), and one for the last window at Stop.
class StallLine {
 public:
  // `session` must outlive this; it runs with SessionOptions::stats.
  StallLine(const Session* session, std::vector<std::string> last_tasks,
            double every_s, std::FILE* out);
  ~StallLine() { Stop(); }
  StallLine(const StallLine&) = delete;
  StallLine& operator=(const StallLine&) = delete;

  void Start();
  void Stop();

  // The whole run's report for the JSON line: "verdict", "last_tasks_wait"
  // (a share) and "stages" ({stage: {"threads", "acts", "busy", "starved",
  // "back_pressured"}}).
  Json Whole(const RunStats& run) const;

  // The verdict over a window in which the last tasks waited `last_wait`
  // of the time (a share; < 0: none of them runs in this process).
  static std::string Verdict(const std::map<std::string, TaskStats>& before,
                             const std::map<std::string, TaskStats>& after,
                             int64_t window_ns, double last_wait);
  // The share of the window the last tasks waited for input, on average.
  double LastTasksWait(const std::map<std::string, TaskStats>& before,
                       const std::map<std::string, TaskStats>& after,
                       int64_t window_ns) const;

 private:
  void Loop();
  // Prints the window since the previous line.
  void Show();

  const Session* const session_;
  const std::vector<std::string> last_tasks_;
  const double every_s_;
  std::FILE* const out_;
  Mutex mu_;
  CondVar wake_;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  // The loop thread's, then Stop's after the join.
  std::map<std::string, TaskStats> before_;
  double before_ms_ = 0;
  int64_t before_pieces_ = 0;
  std::thread thread_;
};

// The names of the tasks of `plan` whose outputs no task reads.
std::vector<std::string> LastTaskNames(const Plan& plan);

}  // namespace actorflow::internal::cli

#endif  // ACTORFLOW_CLI_STALL_LINE_H_
