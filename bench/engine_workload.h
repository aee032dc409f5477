#ifndef ACTORFLOW_BENCH_ENGINE_WORKLOAD_H_
#define ACTORFLOW_BENCH_ENGINE_WORKLOAD_H_

// A dependency-graph workload run twice: by the dependency engine (each op
// pushed with the variables it reads and writes) and by oneTBB's flow graph
// (a continue_node per op, an edge from each op it must follow). Shared by
// engine_bench and peer_suite.

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "bench/bench_util.h"
#include "bench/busy_work.h"
#include "engine/engine.h"

namespace actorflow::internal::bench {

struct DepOp {
  int write;
  std::vector<int> reads;
};

// Each op writes one of `vars` variables and reads up to four (repeats
// allowed, maybe the one it writes): the randomized test's workload.
inline std::vector<DepOp> RandomDepOps(int64_t count, int vars, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  std::vector<DepOp> ops(count);
  for (DepOp& op : ops) {
    op.write = uniform(0, vars - 1);
    int n = uniform(0, 4);
    for (int i = 0; i < n; ++i) op.reads.push_back(uniform(0, vars - 1));
    if (uniform(0, 3) == 0) op.reads.push_back(op.write);
  }
  return ops;
}

// An n x n wavefront: cell (i, j) writes its own variable and reads its
// upper and left neighbours', so anti-diagonals can run in parallel.
inline std::vector<DepOp> WavefrontDepOps(int n) {
  std::vector<DepOp> ops;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      DepOp op{i * n + j, {}};
      if (i > 0) op.reads.push_back((i - 1) * n + j);
      if (j > 0) op.reads.push_back(i * n + j - 1);
      ops.push_back(op);
    }
  }
  return ops;
}

// Seconds for `engine` to run every op (each spinning `work_iters`), from
// the first push to WaitForAll; the process CPU time of that span goes to
// `cpu_ns` if given. Making and deleting the variables is not timed.
inline double RunDepOpsOnEngine(engine::Engine* engine,
                                const std::vector<DepOp>& ops, int num_vars,
                                int64_t work_iters, int64_t* cpu_ns = nullptr) {
  std::vector<engine::VarHandle> vars;
  for (int i = 0; i < num_vars; ++i) vars.push_back(engine->NewVariable());
  std::vector<engine::VarHandle> reads;
  std::vector<engine::VarHandle> writes(1);
  int64_t cpu_start = ProcessCpuNs();
  int64_t start = NowNs();
  for (const DepOp& op : ops) {
    reads.clear();
    for (int r : op.reads) reads.push_back(vars[r]);
    writes[0] = vars[op.write];
    engine->PushAsync(
        [work_iters](engine::RunContext, engine::CallbackOnComplete done) {
          BusyWork::Spin(work_iters);
          done();
        },
        engine::Context::CPU(), reads, writes);
  }
  if (!engine->WaitForAll().ok()) {
    std::fprintf(stderr, "bench: an engine operation failed\n");
    std::exit(1);
  }
  double seconds = (NowNs() - start) * 1e-9;
  if (cpu_ns != nullptr) *cpu_ns = ProcessCpuNs() - cpu_start;
  for (engine::VarHandle var : vars) {
    engine->DeleteVariable(nullptr, engine::Context::CPU(), var);
  }
  engine->WaitForAll().IgnoreError();
  return seconds;
}

// The same graph in oneTBB, timed like the engine: from the op list to the
// graph's destruction, including finding each op's predecessors (the last
// writer of what it touches, and the readers since, for a write). Appends
// to `before_teardown` (if given) the time up to the end of wait_for_all.
// Runs in `arena` when given (its thread count), else in the default one.
inline double RunDepOpsOnTbb(const std::vector<DepOp>& ops, int num_vars,
                             int64_t work_iters,
                             std::vector<double>* before_teardown,
                             tbb::task_arena* arena = nullptr) {
  using Node = tbb::flow::continue_node<tbb::flow::continue_msg>;
  int64_t start = NowNs();
  auto run = [&] {
    tbb::flow::graph graph;
    std::vector<std::unique_ptr<Node>> nodes;
    nodes.reserve(ops.size());
    std::vector<Node*> last_writer(num_vars, nullptr);
    std::vector<std::vector<Node*>> readers_since(num_vars);
    std::vector<Node*> roots;
    std::vector<Node*> preds;
    for (const DepOp& op : ops) {
      nodes.push_back(std::make_unique<Node>(
          graph, [work_iters](const tbb::flow::continue_msg&) {
            BusyWork::Spin(work_iters);
          }));
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
    if (before_teardown != nullptr) {
      before_teardown->push_back((NowNs() - start) * 1e-9);
    }
    nodes.clear();
  };
  if (arena != nullptr) {
    arena->execute(run);
  } else {
    run();
  }
  return (NowNs() - start) * 1e-9;
}

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_ENGINE_WORKLOAD_H_
