// The peer suite's workloads in oneTBB: parallel_pipeline and the flow
// graph, each inside a task_arena of the suite's thread count (the calling
// thread takes one of its slots, as a thread of the others would), or of
// oneTBB's own choosing for a thread count of 0.
#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>

#include <array>
#include <cstdlib>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/peer_workloads.h"
#include "bench/tbb_arena.h"

namespace actorflow::internal::bench::tbb_peer {
namespace {

namespace flow = tbb::flow;

// A source of item numbers 0..items-1 that spins `iters` for each.
auto Counter(int64_t items, int64_t iters, int64_t* next) {
  return [items, iters, next](tbb::flow_control& control) -> int64_t {
    if (*next == items) {
      control.stop();
      return 0;
    }
    BusyWork::Spin(iters);
    return (*next)++;
  };
}

// Runs `build_and_measure` (which returns the Cost it measured) inside an
// TbbArena of `threads`: a flow graph must be built and waited on inside the
// arena it runs in.
template <typename F>
Cost InArena(int threads, F&& build_and_measure) {
  TbbArena arena(threads);
  Cost cost;
  arena.Execute([&] { cost = build_and_measure(); });
  return cost;
}

auto Pass(int64_t iters) {
  return [iters](int64_t x) {
    BusyWork::Spin(iters);
    return x;
  };
}

}  // namespace

Cost Pipeline(const PipelineSpec& spec) {
  TbbArena arena(spec.threads);
  int64_t next = 0;
  const int64_t iters = spec.work_iters;
  return Measure(static_cast<double>(spec.items) * spec.stages, [&] {
    arena.Execute([&] {
      auto line = tbb::make_filter<void, int64_t>(
          tbb::filter_mode::serial_in_order, Counter(spec.items, iters, &next));
      for (int i = 1; i + 1 < spec.stages; ++i) {
        line = line & tbb::make_filter<int64_t, int64_t>(
                          tbb::filter_mode::serial_in_order, Pass(iters));
      }
      tbb::parallel_pipeline(
          spec.cap, line & tbb::make_filter<int64_t, void>(
                               tbb::filter_mode::serial_in_order,
                               [iters](int64_t) { BusyWork::Spin(iters); }));
    });
  });
}

// input_node -> limiter (cap) -> serial function_nodes -> the limiter's
// decrementer.
Cost GraphPipeline(const PipelineSpec& spec) {
  const int64_t iters = spec.work_iters;
  return InArena(spec.threads, [&] {
    flow::graph graph;
    int64_t next = 0;
    flow::input_node<int64_t> source(graph, Counter(spec.items, iters, &next));
    flow::limiter_node<int64_t> limiter(graph, spec.cap);
    std::vector<std::unique_ptr<flow::function_node<int64_t, int64_t>>> mids;
    for (int i = 1; i + 1 < spec.stages; ++i) {
      mids.push_back(std::make_unique<flow::function_node<int64_t, int64_t>>(
          graph, flow::serial, Pass(iters)));
    }
    flow::function_node<int64_t, flow::continue_msg> last(
        graph, flow::serial, [iters](int64_t) {
          BusyWork::Spin(iters);
          return flow::continue_msg();
        });
    flow::make_edge(source, limiter);
    flow::make_edge(limiter, *mids.front());
    for (size_t i = 1; i < mids.size(); ++i) {
      flow::make_edge(*mids[i - 1], *mids[i]);
    }
    flow::make_edge(*mids.back(), last);
    flow::make_edge(last, limiter.decrementer());
    return Measure(static_cast<double>(spec.items) * spec.stages, [&] {
      source.activate();
      graph.wait_for_all();
    });
  });
}

namespace {

constexpr int kBranches = 8;
using Joined = decltype(std::tuple_cat(std::array<int64_t, kBranches>{}));

template <size_t... I>
void JoinEdges(
    std::vector<std::unique_ptr<flow::function_node<int64_t, int64_t>>>& from,
    flow::join_node<Joined, flow::queueing>& join, std::index_sequence<I...>) {
  (flow::make_edge(*from[I], flow::input_port<I>(join)), ...);
}

}  // namespace

// input_node -> limiter -> broadcast -> 8 serial branches -> join -> sink
// -> the limiter's decrementer.
Cost Fan(const FanSpec& spec) {
  if (spec.branches != kBranches) std::abort();  // the join's arity is fixed
  const int64_t iters = spec.work_iters;
  return InArena(spec.threads, [&] {
    flow::graph graph;
    int64_t next = 0;
    flow::input_node<int64_t> source(graph, Counter(spec.items, 0, &next));
    flow::limiter_node<int64_t> limiter(graph, spec.cap);
    flow::broadcast_node<int64_t> broadcast(graph);
    std::vector<std::unique_ptr<flow::function_node<int64_t, int64_t>>>
        branches;
    for (int b = 0; b < kBranches; ++b) {
      branches.push_back(
          std::make_unique<flow::function_node<int64_t, int64_t>>(
              graph, flow::serial, Pass(iters)));
      flow::make_edge(broadcast, *branches.back());
    }
    flow::join_node<Joined, flow::queueing> join(graph);
    JoinEdges(branches, join, std::make_index_sequence<kBranches>());
    flow::function_node<Joined, flow::continue_msg> sink(
        graph, flow::serial,
        [](const Joined&) { return flow::continue_msg(); });
    flow::make_edge(source, limiter);
    flow::make_edge(limiter, broadcast);
    flow::make_edge(join, sink);
    flow::make_edge(sink, limiter.decrementer());
    return Measure(static_cast<double>(spec.items) * kBranches, [&] {
      source.activate();
      graph.wait_for_all();
    });
  });
}

// Two input_nodes filling payloads into one serial function_node, whose
// queueing policy takes whatever arrives.
Cost Overload(const OverloadSpec& spec) {
  return InArena(spec.threads, [&] {
    flow::graph graph;
    using Payload = std::vector<float>;
    int64_t next[2] = {0, 0};
    std::vector<std::unique_ptr<flow::input_node<Payload>>> producers;
    for (int p = 0; p < 2; ++p) {
      producers.push_back(std::make_unique<flow::input_node<Payload>>(
          graph, [&, p](tbb::flow_control& control) {
            if (next[p] == spec.items) {
              control.stop();
              return Payload();
            }
            ++next[p];
            return Payload(spec.payload_floats, static_cast<float>(next[p]));
          }));
    }
    const int64_t iters = spec.work_iters;
    flow::function_node<Payload, flow::continue_msg> consumer(
        graph, flow::serial, [iters](const Payload&) {
          BusyWork::Spin(iters);
          return flow::continue_msg();
        });
    for (auto& producer : producers) flow::make_edge(*producer, consumer);
    return Measure(2.0 * spec.items, [&] {
      for (auto& producer : producers) producer->activate();
      graph.wait_for_all();
    });
  });
}

}  // namespace actorflow::internal::bench::tbb_peer
