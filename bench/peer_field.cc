#include "bench/peer_field.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/bench_util.h"
#include "bench/peer_workloads.h"

namespace actorflow::internal::bench {
namespace {

struct Peer {
  std::string name;
  std::function<Cost()> run;
};

// Items whose 1 us units take `span` on one CPU: under a CPU quota a run
// is that long at least (RunFieldRows). A run that starts after an idle
// gap (the next sample's setup) finds the quota's period unspent, and a
// peer with more threads than the quota spends it on every CPU before the
// kernel throttles the group: over a run of a few periods it gets more
// than the quota gives a long job (oneTBB's two threads: 0.93 us per 1 us
// unit under a quota of one CPU, with 12 ms runs and 10 ms periods). Over
// many periods each peer gets what the quota allows.
int64_t ItemsToSpan(absl::Duration span, int units_per_item) {
  return absl::ToInt64Microseconds(span) / units_per_item;
}

// Runs `peer` again until its runs took `sustain` of wall time together (at
// least once): the mean cost per unit of those runs.
Cost Sustained(const Peer& peer, absl::Duration sustain) {
  Cost total;
  int runs = 0;
  const absl::Time start = absl::Now();
  do {
    const Cost cost = peer.run();
    total.wall_ns += cost.wall_ns;
    total.cpu_ns += cost.cpu_ns;
    ++runs;
  } while (absl::Now() - start < sustain);
  return {total.wall_ns / runs, total.cpu_ns / runs};
}

// One warm-up each, then `samples` rounds of every peer in turn.
void Print(const std::string& workload, int threads, std::vector<Peer> peers,
           int samples, absl::Duration sustain) {
  for (Peer& peer : peers) Sustained(peer, sustain);
  std::vector<std::vector<double>> wall(peers.size()), cpu(peers.size());
  for (int s = 0; s < samples; ++s) {
    for (size_t p = 0; p < peers.size(); ++p) {
      const Cost cost = Sustained(peers[p], sustain);
      wall[p].push_back(cost.wall_ns);
      cpu[p].push_back(cost.cpu_ns);
    }
  }
  for (size_t p = 0; p < peers.size(); ++p) {
    std::printf("field\t%s\t%d\t%s\t%.3f\t%.3f\n", workload.c_str(), threads,
                peers[p].name.c_str(), Median(wall[p]), Median(cpu[p]));
    std::fflush(stdout);
  }
}

}  // namespace

void RunFieldRows(const BusyWork& work, bool quick, int samples,
                  absl::Duration sustain) {
  const int64_t one_us = work.ItersFor(1000);
  for (int threads : kFieldThreads) {
    PipelineSpec line;
    line.threads = threads;
    line.cap = 2;
    line.work_iters = one_us;
    line.items = std::max<int64_t>(quick ? 1'500 : 5'000,
                                   ItemsToSpan(sustain, line.stages));
    // oneTBB as shipped: its arena as large as it finds the machine.
    PipelineSpec line_shipped = line;
    line_shipped.threads = 0;
    Print("pipeline 1 us, cap 2", threads,
          {{"actorflow", [&] { return actorflow_peer::Pipeline(line); }},
           {"oneTBB parallel_pipeline, as shipped",
            [&] { return tbb_peer::Pipeline(line_shipped); }},
           {"oneTBB parallel_pipeline, arena of N",
            [&] { return tbb_peer::Pipeline(line); }},
           {"CAF", [&] { return caf_peer::Pipeline(line); }}},
          samples, sustain);
    FanSpec fan;
    fan.threads = threads;
    fan.work_iters = one_us;
    fan.items = std::max<int64_t>(quick ? 1'500 : 5'000,
                                  ItemsToSpan(sustain, fan.branches));
    FanSpec fan_shipped = fan;
    fan_shipped.threads = 0;
    Print(
        "fan-out/fan-in 8 x 1 us, cap 2", threads,
        {{"actorflow", [&] { return actorflow_peer::Fan(fan); }},
         {"oneTBB flow graph, as shipped",
          [&] { return tbb_peer::Fan(fan_shipped); }},
         {"oneTBB flow graph, arena of N", [&] { return tbb_peer::Fan(fan); }},
         {"CAF", [&] { return caf_peer::Fan(fan); }}},
        samples, sustain);
  }
}

std::vector<FieldRow> ParseFieldRows(const std::string& output) {
  std::vector<FieldRow> rows;
  for (absl::string_view line : absl::StrSplit(output, '\n')) {
    std::vector<std::string> parts = absl::StrSplit(line, '\t');
    if (parts.size() != 6 || parts[0] != "field") continue;
    FieldRow row;
    row.workload = parts[1];
    row.peer = parts[3];
    if (absl::SimpleAtoi(parts[2], &row.threads) &&
        absl::SimpleAtod(parts[4], &row.cost.wall_ns) &&
        absl::SimpleAtod(parts[5], &row.cost.cpu_ns)) {
      rows.push_back(std::move(row));
    }
  }
  return rows;
}

}  // namespace actorflow::internal::bench
