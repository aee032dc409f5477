// Operations per second of the dependency engine on the randomized workload
// of tests/engine_random_test.cc with empty functions: each operation
// writes one of 100 variables and reads up to four (repeats allowed, maybe
// the one it writes). Each engine type runs it beside oneTBB's flow graph
// running the same dependency graph, in alternation, in the same run.
//
// The TBB side is timed like the engine: from the operation list to the
// end of wait_for_all, including finding each operation's predecessors
// (the last writer of what it touches, and the readers since, for a write),
// building one continue_node per operation and its edges, and destroying
// the graph.
//
//   tools/bazel run //bench:engine_bench
//   tools/bazel run //bench:engine_bench -- --ops=200000 --samples=9
#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "bench/engine_workload.h"
#include "engine/engine.h"

namespace actorflow::internal::bench {
namespace {

struct Config {
  int64_t samples = 7;
  int64_t ops = 100'000;
  int64_t vars = 100;
};

constexpr char kHelp[] =
    "engine_bench: operations per second of each dependency engine type on\n"
    "a random workload of empty operations (100 variables, each op writes\n"
    "one and reads up to four), beside oneTBB's flow graph running the same\n"
    "dependency graph in the same run.\n\n"
    "Thread counts come from ACTORFLOW_CPU_WORKER_NTHREADS and friends (see\n"
    "docs/engine.md). Prints medians and the median ratio engine / TBB, and "
    "for\n"
    "reference TBB's rate without destroying its graph (not in the ratio),\n"
    "and each side's process CPU time per operation (pusher and workers);\n"
    "then the profiler's cost per operation (off and on, in alternation).";

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  using namespace actorflow;            // NOLINT(build/namespaces)
  using namespace actorflow::internal;  // NOLINT(build/namespaces)
  using namespace actorflow::internal::bench;
  using namespace actorflow::engine;
  Config config;
  ParseFlags("engine_bench", argc, argv,
             {{"ops", &config.ops, "operations per sample"},
              {"vars", &config.vars, "variables"},
              {"samples", &config.samples, "samples per measurement"}},
             kHelp);
  std::vector<DepOp> ops =
      RandomDepOps(config.ops, static_cast<int>(config.vars), 20261122);
  int vars = static_cast<int>(config.vars);
  std::printf("engine_bench: %lld empty ops over %d variables, %lld samples\n",
              static_cast<long long>(config.ops), vars,
              static_cast<long long>(config.samples));
  std::printf("%-26s %14s %14s %10s %17s %14s %11s\n", "engine",
              "engine Mops/s", "TBB Mops/s", "engine/TBB", "TBB w/o teardown",
              "engine CPU/op", "TBB CPU/op");
  for (EngineType type : {EngineType::kNaive, EngineType::kThreadedPooled,
                          EngineType::kThreadedPerDevice}) {
    std::unique_ptr<Engine> engine = Engine::Create(type);
    // Measured as seconds; reported as rates, so the ratio is inverted.
    std::vector<double> tbb_before_teardown, engine_cpu, tbb_cpu;
    Paired p = PairedMedians(
        static_cast<int>(config.samples),
        [&] {
          int64_t cpu = 0;
          const double s = RunDepOpsOnEngine(engine.get(), ops, vars, 0, &cpu);
          engine_cpu.push_back(static_cast<double>(cpu));
          return s;
        },
        [&] {
          const int64_t cpu_start = ProcessCpuNs();
          const double s = RunDepOpsOnTbb(ops, vars, 0, &tbb_before_teardown);
          tbb_cpu.push_back(static_cast<double>(ProcessCpuNs() - cpu_start));
          return s;
        });
    double n = static_cast<double>(config.ops) * 1e-6;
    // CPU time of the whole process (pusher and workers) per operation.
    std::printf("%-26s %14.2f %14.2f %9.2fx %17.2f %11.0f ns %8.0f ns\n",
                EngineTypeName(type), n / p.subject, n / p.baseline, p.ratio,
                n / Median(tbb_before_teardown),
                Median(engine_cpu) / static_cast<double>(config.ops),
                Median(tbb_cpu) / static_cast<double>(config.ops));
  }

  // The profiler's cost per operation: the same workload on
  // ThreadedEnginePerDevice with the profiler off and on, in alternation.
  // Records are cleared after each sample, outside the time.
  std::unique_ptr<Engine> engine =
      Engine::Create(EngineType::kThreadedPerDevice);
  Paired profiled = PairedMedians(
      static_cast<int>(config.samples),
      [&] {
        engine->SetProfiling(true);
        const double seconds = RunDepOpsOnEngine(engine.get(), ops, vars, 0);
        engine->SetProfiling(false);
        engine->ClearProfile();
        return seconds;
      },
      [&] { return RunDepOpsOnEngine(engine.get(), ops, vars, 0); });
  const double ns_per_op = 1e9 / static_cast<double>(config.ops);
  std::printf(
      "profiler (ThreadedEnginePerDevice): off %.0f ns/op, on %.0f ns/op, "
      "on costs %.0f ns/op (median ratio off/on %.2fx)\n",
      profiled.baseline * ns_per_op, profiled.subject * ns_per_op,
      (profiled.subject - profiled.baseline) * ns_per_op, profiled.ratio);
  return 0;
}
