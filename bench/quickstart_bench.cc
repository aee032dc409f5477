// The quick-start plan as a new user meets it, beside the same plan with
// every task on one stream, measured in the same run; and what an idle
// session costs. See kHelp.

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "actorflow/session.h"
#include "bench/bench_util.h"
#include "bench/busy_work.h"
#include "compiler/plan_or_job.h"

namespace actorflow::internal::bench {
namespace {

constexpr char kHelp[] =
    R"(The quick start's plan on a fresh session each time, as `actorflow run`
gives it (examples/plans/quickstart.pbtxt: five tasks on three streams),
alternated with the same plan with every task on stream 0: median and 90th
percentile wall time of the run, over --runs runs each. Targets: the
quick start's median at most 1.5x the one-stream median, its 90th
percentile at most 2x its own median.

Then an idle session: the quick start's session made and started, fed
nothing more after its run, left alone for --idle-ms; the CPU time its
process used in that time, after the spin window (1 ms), as a share of one
core. Target: under 1 %.

Run it from the workspace (tools/bazel run //bench:quickstart_bench) or
give --plan.)";

// One run of `plan` on a session of its own, its wall time in ms.
double RunOnce(const Plan& plan) {
  auto session = Session::Create(plan);
  if (!session.ok()) {
    std::fprintf(stderr, "quickstart_bench: %s\n",
                 std::string(session.status().message()).c_str());
    std::exit(1);
  }
  auto stats = (*session)->Run(-1);
  if (!stats.ok()) {
    std::fprintf(stderr, "quickstart_bench: %s\n",
                 std::string(stats.status().message()).c_str());
    std::exit(1);
  }
  return stats->wall_ms;
}

int Main(int argc, char** argv) {
  int64_t runs = 21, idle_ms = 1000;
  std::string path = "examples/plans/quickstart.pbtxt";
  FlagSet flags("quickstart_bench [flags]", kHelp);
  flags.Int("runs", &runs, "runs of each plan", 3);
  flags.Int("idle-ms", &idle_ms, "how long the idle session is watched", 100);
  flags.String("plan", &path, "FILE", "the quick-start plan");
  flags.ParseOrExit(argc, argv);
  if (const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
      workspace != nullptr && path[0] != '/') {
    path = std::string(workspace) + "/" + path;
  }
  absl::StatusOr<LoadedPlan> loaded = LoadPlanOrJob(path);
  if (!loaded.ok()) {
    std::fprintf(stderr, "quickstart_bench: %s\n",
                 std::string(loaded.status().message()).c_str());
    return 2;
  }
  const Plan three = loaded->plan;
  Plan one = three;
  for (TaskProto& task : *one.mutable_task()) {
    task.mutable_stream()->set_stream_index(0);
  }
  RunOnce(three);
  RunOnce(one);
  std::vector<double> three_ms, one_ms;
  for (int r = 0; r < runs; ++r) {
    three_ms.push_back(RunOnce(three));
    one_ms.push_back(RunOnce(one));
  }
  const double median = Median(three_ms), p90 = Percentile(three_ms, 0.9);
  const double one_median = Median(one_ms);
  std::printf("quick start (3 streams): median %.3f ms, p90 %.3f ms\n", median,
              p90);
  std::printf("one stream:              median %.3f ms, p90 %.3f ms\n",
              one_median, Percentile(one_ms, 0.9));
  std::printf("%s: median %.2fx the one-stream median (target <= 1.5x)\n",
              median <= 1.5 * one_median ? "holds" : "MISSED",
              median / one_median);
  std::printf("%s: p90 %.2fx its median (target <= 2x)\n",
              p90 <= 2 * median ? "holds" : "MISSED", p90 / median);

  // An idle session: its threads spin for at most the spin window after
  // its last message, then park.
  auto session = Session::Create(three);
  if (!session.ok() || !(*session)->Run(-1).ok()) return 1;
  std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const int64_t cpu = ProcessCpuNs(), wall = NowNs();
  std::this_thread::sleep_for(std::chrono::milliseconds(idle_ms));
  const double share = static_cast<double>(ProcessCpuNs() - cpu) /
                       static_cast<double>(NowNs() - wall);
  std::printf(
      "%s: an idle session used %.3f %% of a core over %lld ms "
      "(target < 1 %%)\n",
      share < 0.01 ? "holds" : "MISSED", 100 * share,
      static_cast<long long>(idle_ms));
  return 0;
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  return actorflow::internal::bench::Main(argc, argv);
}
