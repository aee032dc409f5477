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
#include <oneapi/tbb/flow_graph.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "engine/engine.h"

namespace actorflow::bench {
namespace {

struct Config {
  int64_t samples = 7;
  int64_t ops = 100'000;
  int64_t vars = 100;
};

struct Op {
  int write;
  std::vector<int> reads;
};

std::vector<Op> MakeOps(const Config& config, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  int vars = static_cast<int>(config.vars);
  std::vector<Op> ops(config.ops);
  for (Op& op : ops) {
    op.write = uniform(0, vars - 1);
    int n = uniform(0, 4);
    for (int i = 0; i < n; ++i) op.reads.push_back(uniform(0, vars - 1));
    if (uniform(0, 3) == 0) op.reads.push_back(op.write);
  }
  return ops;
}

// Seconds for `engine` to run every op, from the first push to WaitForAll.
double RunEngine(Engine* engine, const std::vector<Op>& ops, int num_vars) {
  std::vector<VarHandle> vars;
  for (int i = 0; i < num_vars; ++i) vars.push_back(engine->NewVariable());
  std::vector<VarHandle> reads;
  std::vector<VarHandle> writes(1);
  int64_t start = NowNs();
  for (const Op& op : ops) {
    reads.clear();
    for (int r : op.reads) reads.push_back(vars[r]);
    writes[0] = vars[op.write];
    engine->PushAsync([](RunContext, CallbackOnComplete done) { done(); },
                      Context::CPU(), reads, writes);
  }
  if (!engine->WaitForAll().ok()) {
    std::fprintf(stderr, "engine_bench: an empty operation failed\n");
    std::exit(1);
  }
  double seconds = (NowNs() - start) * 1e-9;
  for (VarHandle var : vars)
    engine->DeleteVariable(nullptr, Context::CPU(), var);
  engine->WaitForAll().IgnoreError();
  return seconds;
}

// The same graph in oneTBB: a continue_node per op, an edge from each op it
// must follow. Also appends to `before_teardown` the time up to the end of
// wait_for_all, before the graph is destroyed.
double RunTbb(const std::vector<Op>& ops, int num_vars,
              std::vector<double>* before_teardown) {
  using Node = tbb::flow::continue_node<tbb::flow::continue_msg>;
  int64_t start = NowNs();
  {  // timed up to the graph's destruction, as the engine frees its ops
    tbb::flow::graph graph;
    std::vector<std::unique_ptr<Node>> nodes;
    nodes.reserve(ops.size());
    std::vector<Node*> last_writer(num_vars, nullptr);
    std::vector<std::vector<Node*>> readers_since(num_vars);
    std::vector<Node*> roots;
    std::vector<Node*> preds;
    for (const Op& op : ops) {
      nodes.push_back(
          std::make_unique<Node>(graph, [](const tbb::flow::continue_msg&) {}));
      Node* node = nodes.back().get();
      preds.clear();
      for (int r : op.reads) {
        if (r == op.write) continue;  // counted as the write below
        if (last_writer[r] != nullptr) preds.push_back(last_writer[r]);
      }
      int w = op.write;
      if (last_writer[w] != nullptr) preds.push_back(last_writer[w]);
      for (Node* reader : readers_since[w]) preds.push_back(reader);
      std::sort(preds.begin(), preds.end());
      preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
      for (Node* pred : preds) tbb::flow::make_edge(*pred, *node);
      if (preds.empty()) roots.push_back(node);
      for (int r : op.reads) {
        if (r != w) readers_since[r].push_back(node);
      }
      last_writer[w] = node;
      readers_since[w].clear();
    }
    for (Node* root : roots) root->try_put(tbb::flow::continue_msg());
    graph.wait_for_all();
    before_teardown->push_back((NowNs() - start) * 1e-9);
    nodes.clear();
  }
  return (NowNs() - start) * 1e-9;
}

constexpr char kHelp[] =
    "engine_bench: operations per second of each dependency engine type on\n"
    "a random workload of empty operations (100 variables, each op writes\n"
    "one and reads up to four), beside oneTBB's flow graph running the same\n"
    "dependency graph in the same run.\n"
    "\n"
    "  --ops=N      operations per sample (default 100000)\n"
    "  --vars=N     variables (default 100)\n"
    "  --samples=N  samples per measurement (default 7)\n"
    "\n"
    "Thread counts come from ACTORFLOW_CPU_WORKER_NTHREADS and friends (see\n"
    "README.md). Prints medians and the median ratio engine / TBB, and for\n"
    "reference TBB's rate without destroying its graph (not in the ratio).\n";

}  // namespace
}  // namespace actorflow::bench

int main(int argc, char** argv) {
  using namespace actorflow;
  using namespace actorflow::bench;
  Config config;
  ParseFlags("engine_bench", argc, argv,
             {{"--ops", &config.ops},
              {"--vars", &config.vars},
              {"--samples", &config.samples}},
             kHelp);
  std::vector<Op> ops = MakeOps(config, 20261122);
  int vars = static_cast<int>(config.vars);
  std::printf("engine_bench: %lld empty ops over %d variables, %lld samples\n",
              static_cast<long long>(config.ops), vars,
              static_cast<long long>(config.samples));
  std::printf("%-26s %14s %14s %10s %17s\n", "engine", "engine Mops/s",
              "TBB Mops/s", "engine/TBB", "TBB w/o teardown");
  for (EngineType type : {EngineType::kNaive, EngineType::kThreadedPooled,
                          EngineType::kThreadedPerDevice}) {
    std::unique_ptr<Engine> engine = Engine::Create(type);
    // Measured as seconds; reported as rates, so the ratio is inverted.
    std::vector<double> tbb_before_teardown;
    Paired p = PairedMedians(
        static_cast<int>(config.samples),
        [&] { return RunEngine(engine.get(), ops, vars); },
        [&] { return RunTbb(ops, vars, &tbb_before_teardown); });
    double n = static_cast<double>(config.ops) * 1e-6;
    std::printf("%-26s %14.2f %14.2f %9.2fx %17.2f\n", EngineTypeName(type),
                n / p.subject, n / p.baseline, p.ratio,
                n / Median(tbb_before_teardown));
  }
  return 0;
}
