#ifndef ACTORFLOW_BENCH_PEER_WORKLOADS_H_
#define ACTORFLOW_BENCH_PEER_WORKLOADS_H_

// The peer suite's workloads, each implemented once per framework
// (peers_actorflow.cc, peers_tbb.cc, peers_caf.cc) with the same work, the
// same in-flight cap and the same number of threads.

#include <cstdint>
#include <vector>

#include "bench/busy_work.h"

namespace actorflow::internal::bench {

// `stages` serial stages in a line, each doing `work_iters` of busy work
// per item; at most `cap` items between the first stage and the last.
// Cost per stage execution (items * stages units).
struct PipelineSpec {
  int threads = 2;  // oneTBB: 0 takes its default arena
  // actorflow only: how many threads its stages are spread over (0: all
  // `threads`); the others schedule stages themselves.
  int placement_threads = 0;
  int stages = 8;
  int cap = 2;
  int64_t work_iters = 0;
  int64_t items = 0;
};

// One item bounced between two threads, `rounds` times; each round trip's
// wall time, in ns.
struct PingPongSpec {
  int64_t rounds = 0;
};

// A source, `branches` parallel branches doing `work_iters` each, and a
// join that needs every branch's result for an item; at most `cap` items
// in flight. Cost per branch execution (items * branches units).
struct FanSpec {
  int threads = 2;  // oneTBB: 0 takes its default arena
  int branches = 8;
  int cap = 2;
  int64_t work_iters = 0;
  int64_t items = 0;
};

// Two producers as fast as they can, each `items` messages of
// `payload_floats` floats, into one consumer that spends `work_iters` on
// each: what the framework does with the backlog. Cost per consumed item.
struct OverloadSpec {
  int threads = 2;
  int64_t items = 0;  // per producer
  int payload_floats = 256;
  int64_t work_iters = 0;
};

namespace actorflow_peer {
Cost Pipeline(const PipelineSpec& spec);
std::vector<double> PingPong(const PingPongSpec& spec);
Cost Fan(const FanSpec& spec);
Cost Overload(const OverloadSpec& spec);
}  // namespace actorflow_peer

namespace tbb_peer {
Cost Pipeline(const PipelineSpec& spec);       // parallel_pipeline
Cost GraphPipeline(const PipelineSpec& spec);  // flow graph + limiter
Cost Fan(const FanSpec& spec);                 // flow graph
Cost Overload(const OverloadSpec& spec);       // flow graph
}  // namespace tbb_peer

namespace caf_peer {
Cost Pipeline(const PipelineSpec& spec);
std::vector<double> PingPong(const PingPongSpec& spec, int threads);
Cost Fan(const FanSpec& spec);
Cost Overload(const OverloadSpec& spec);
}  // namespace caf_peer

// Two threads bouncing one atomic flag: the machine's floor for a round
// trip between cores.
std::vector<double> AtomicPingPong(const PingPongSpec& spec);

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_PEER_WORKLOADS_H_
