#ifndef ACTORFLOW_BENCH_PEER_FIELD_H_
#define ACTORFLOW_BENCH_PEER_FIELD_H_

// The peer suite's field rows: the pipeline and fan workloads with more
// threads than the machine has cores, on a machine that is idle, that
// another process shares (a burner spinning on one core), or that a cgroup
// CPU quota of one CPU limits. Each condition runs in a child process of
// its own (peer_suite.cc sets the condition up), which runs every row and
// prints one line per row.

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "bench/busy_work.h"

namespace actorflow::internal::bench {

// Thread counts of the field rows; the first is the machine's own (the
// baseline the others are held to).
inline const std::vector<int> kFieldThreads = {2, 3, 4, 8};

struct FieldRow {
  std::string workload;  // "pipeline 1 us, cap 2" or "fan-out/fan-in 8 x 1 us"
  int threads = 0;
  std::string peer;
  Cost cost;
};

// Runs every field row in this process (`samples` alternated rounds of
// every peer, medians), printing each as a "field\t..." line on stdout.
// Each sample repeats its peer's run for `sustain` of wall time at least
// (one run when zero) and counts the mean; with `sustain` given (under a
// CPU quota), each run has the items to keep one CPU busy that long.
void RunFieldRows(const BusyWork& work, bool quick, int samples,
                  absl::Duration sustain);

// Reads the rows RunFieldRows printed.
std::vector<FieldRow> ParseFieldRows(const std::string& output);

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_PEER_FIELD_H_
