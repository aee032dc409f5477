// net_bench --reduce=1: one partial sum made on every rank and read whole
// on rank 0 (--reduce-everywhere=1: on every rank, as each rank's optimizer
// reads its gradient's sum), over 2, 4 and 8 ranks, each in a network
// namespace of its own plugged into one bridge (a switch) by a veth pair
// capped at 1 Gbit/s each way (tc tbf). The job compiler's choice
// (Job.partial_sum_reduction AUTO: a reduce-scatter from 3 machines besides
// the reader's) against every part gathered on rank 0 (PARTIAL_SUM_GATHER),
// alternated, in milliseconds per reduction over a run of several: the time
// a training step waits on its gradient's sum, piece after piece. Beside
// it, how busy the links were while the choice ran (each rank reads its
// own veth end's counters): rank 0's each way, and the other ranks' mean.
#ifndef ACTORFLOW_BENCH_NET_REDUCTION_H_
#define ACTORFLOW_BENCH_NET_REDUCTION_H_

#include <cstdint>
#include <string>

namespace actorflow::internal::bench {

struct ReductionConfig {
  int64_t samples = 11;
  int64_t mib = 16;       // the partial sum's size
  int64_t pieces = 8;     // reductions per sample
  int64_t max_ranks = 8;  // rows at 2, 4, ... up to this
  // 1: every rank reads the whole sum (a data-parallel gradient); 0: rank
  // 0 alone.
  int64_t everywhere = 0;
};

// Needs root, iproute2 and tc. Starts this binary as every rank (argv[1]
// kReductionRankFlag, argv[2] its place), prints the table; the exit code.
int CompareReductions(const ReductionConfig& config);

// One rank, in its namespace: `place` is "RANK,WORLD,SUBNET".
inline constexpr char kReductionRankFlag[] = "--reduce-rank";
int ReductionRank(const ReductionConfig& config, const std::string& place);

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_NET_REDUCTION_H_
