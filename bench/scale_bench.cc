// Cost as the plan grows: random DAGs of 1,000, 10,000 and 100,000 tasks
// on two streams. See kHelp.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actorflow/job_builder.h"
#include "actorflow/job_compiler.h"
#include "actorflow/session.h"
#include "bench/bench_util.h"
#include "plan/plan_builder.h"

namespace actorflow::internal::bench {
namespace {

constexpr char kHelp[] =
    R"(Plans of 1,000, 10,000 and 100,000 operators: a random DAG on two CPU
streams (a source, then eight layers whose operators each add one or two
operators of the layer before; one nobody reads gets a checksum task of its
own), each size in a fresh session:
  start-up   Session::Create (validate, infer shapes, allocate, start the
             threads, construct the actors) per task
  memory     resident memory the session added, per task
  act        wall time per act over a run of some 2 million acts
  unbatched  the same in a second session that hands each register over as
             it is made (SessionOptions::batch_deliveries_from = INT_MAX;
             by default threads of 64 actors or more batch deliveries)
  job        the same DAG written with JobBuilder and compiled to a plan
             (CompileJob), per op
and the ratio of the largest size's figure to the smallest's for each:
flat is 1.)";

int64_t ResidentBytes() {
  std::ifstream statm("/proc/self/statm");
  int64_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * sysconf(_SC_PAGESIZE);
}

// Operator i's inputs: one or two operators of the layer before its own.
// Eight layers whatever the size, so that a run of a few dozen pieces is
// mostly steady state at every size (a deeper graph would spend its runs
// filling and draining).
std::vector<std::vector<int>> RandomDag(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  constexpr int kLayers = 8;
  const int width = std::max(1, (n - 1) / kLayers);
  std::vector<std::vector<int>> inputs(n);
  for (int i = 1; i < n; ++i) {
    const int layer = (i - 1) / width;  // operator 0 alone before layer 0
    if (layer == 0) {
      inputs[i].push_back(0);
      continue;
    }
    const int lo = 1 + (layer - 1) * width;
    inputs[i].push_back(lo + static_cast<int>(rng() % width));
    const int other = lo + static_cast<int>(rng() % width);
    if (rng() % 2 && other != inputs[i][0]) inputs[i].push_back(other);
  }
  return inputs;
}

// Which tasks some other task reads; the others get a checksum of their own.
std::vector<bool> Read(const std::vector<std::vector<int>>& inputs) {
  std::vector<bool> read(inputs.size(), false);
  for (const auto& in : inputs) {
    for (int j : in) read[j] = true;
  }
  return read;
}

std::vector<TaskDef> DagTasks(const std::vector<std::vector<int>>& inputs) {
  const std::vector<bool> read = Read(inputs);
  std::vector<TaskDef> tasks;
  for (size_t i = 0; i < inputs.size(); ++i) {
    TaskDef task{.name = "t" + std::to_string(i),
                 .op_type = i == 0 ? "source" : "add"};
    task.stream_index = i % 2;
    task.elem_cnt = 16;
    for (int j : inputs[i]) task.inputs.push_back("t" + std::to_string(j));
    tasks.push_back(task);
    if (!read[i]) {
      TaskDef sink{.name = "s" + std::to_string(i),
                   .op_type = "checksum",
                   .inputs = {task.name}};
      sink.stream_index = i % 2;
      sink.has_output = false;
      tasks.push_back(sink);
    }
  }
  return tasks;
}

Job DagJob(const std::vector<std::vector<int>>& inputs, int64_t pieces) {
  const std::vector<bool> read = Read(inputs);
  JobBuilder job(pieces);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "t" + std::to_string(i);
    auto op = job.Op(name, i == 0 ? "source" : "add");
    if (i == 0) op.Shape({16});
    for (int j : inputs[i]) op.Input("t" + std::to_string(j));
    if (!read[i]) job.Op("s" + std::to_string(i), "checksum").Input(name);
  }
  return job.job();
}

struct Figures {
  double startup_us = 0;  // per task
  double bytes = 0;       // per task
  double act_ns = 0;
  double unbatched_act_ns = 0;
  double job_us = 0;  // per op
};

void Fail(const absl::Status& status) {
  std::fprintf(stderr, "scale_bench: %s\n",
               std::string(status.message()).c_str());
  std::exit(1);
}

// Wall ns per act of a run of `pieces`, after a short warm-up run.
double ActNs(Session& session, int64_t pieces) {
  if (auto warm = session.Run(2); !warm.ok()) Fail(warm.status());
  auto run = session.Run(pieces);
  if (!run.ok()) Fail(run.status());
  return run->wall_ms * 1e6 / static_cast<double>(run->acts);
}

Figures Measure(int n) {
  const auto inputs = RandomDag(n, 20261128);
  const std::vector<TaskDef> tasks = DagTasks(inputs);
  absl::StatusOr<Plan> plan = BuildPlan(tasks, 0);
  if (!plan.ok()) Fail(plan.status());
  const Plan plan_to_run_unbatched = *plan;
  n = static_cast<int>(tasks.size());
  Figures f;
  const int64_t rss = ResidentBytes();
  const int64_t start = NowNs();
  auto session = Session::Create(*std::move(plan));
  if (!session.ok()) Fail(session.status());
  f.startup_us = (NowNs() - start) / 1e3 / n;
  f.bytes = static_cast<double>(ResidentBytes() - rss) / n;
  const int64_t pieces = std::max<int64_t>(32, 2'000'000 / n);
  f.act_ns = ActNs(**session, pieces);
  session->reset();
  SessionOptions unbatched;
  unbatched.batch_deliveries_from = std::numeric_limits<int>::max();
  auto plain = Session::Create(plan_to_run_unbatched, unbatched);
  if (!plain.ok()) Fail(plain.status());
  f.unbatched_act_ns = ActNs(**plain, pieces);
  plain->reset();
  const Job job = DagJob(inputs, pieces);  // its ops: the plan's tasks
  const int64_t compile = NowNs();
  absl::StatusOr<CompiledJob> compiled = CompileJob(job);
  if (!compiled.ok()) Fail(compiled.status());
  f.job_us = (NowNs() - compile) / 1e3 / n;
  return f;
}

int Main(int argc, char** argv) {
  int64_t largest = 100'000;
  ParseFlags("scale_bench", argc, argv,
             {{"largest", &largest, "the largest plan's tasks", 1000}}, kHelp);
  std::vector<int> sizes = {1'000};
  if (largest >= 10'000) sizes.push_back(10'000);
  if (largest > 10'000) sizes.push_back(static_cast<int>(largest));
  std::vector<Figures> all;
  std::printf("%10s %16s %14s %10s %16s %14s\n", "tasks", "start-up us/task",
              "memory B/task", "ns/act", "unbatched ns/act", "job us/op");
  for (int n : sizes) {
    all.push_back(Measure(n));
    const Figures& f = all.back();
    std::printf("%10d %16.2f %14.0f %10.1f %16.1f %14.2f\n", n, f.startup_us,
                f.bytes, f.act_ns, f.unbatched_act_ns, f.job_us);
    std::fflush(stdout);
  }
  const Figures& a = all.front();
  const Figures& b = all.back();
  std::printf(
      "%d / %d tasks: start-up %.2fx, memory %.2fx, act %.2fx (unbatched "
      "%.2fx), job %.2fx\n",
      sizes.back(), sizes.front(), b.startup_us / a.startup_us,
      b.bytes / a.bytes, b.act_ns / a.act_ns,
      b.unbatched_act_ns / a.unbatched_act_ns, b.job_us / a.job_us);
  std::printf("%d tasks: act batched / unbatched %.2fx\n", sizes.back(),
              b.act_ns / b.unbatched_act_ns);
  return 0;
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  return actorflow::internal::bench::Main(argc, argv);
}
