#ifndef ACTORFLOW_BENCH_BUSY_WORK_H_
#define ACTORFLOW_BENCH_BUSY_WORK_H_

#include <time.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench/bench_util.h"

namespace actorflow::internal::bench {

// A calibrated busy loop: the per-stage "work" of the peer suite. Every
// peer calls the same function, so a microsecond of work costs each the
// same, and nothing sleeps (a sleeping stage would hide scheduling cost).
class BusyWork {
 public:
  // Measures how many loop iterations take a nanosecond on this machine:
  // the median of a few tries, the speed the loop typically runs at here.
  static BusyWork Calibrate() {
    constexpr int64_t kIters = 10'000'000;
    std::vector<double> ns;
    for (int attempt = 0; attempt < 7; ++attempt) {
      int64_t start = NowNs();
      Spin(kIters);
      ns.push_back(static_cast<double>(NowNs() - start));
    }
    return BusyWork(kIters / Median(ns));
  }

  // A rate measured earlier (a child process of the suite reuses its
  // parent's, so every peer spins the same loop count).
  static BusyWork FromRate(double iters_per_ns) {
    return BusyWork(iters_per_ns);
  }

  // Iterations that take about `ns`.
  int64_t ItersFor(double ns) const {
    return static_cast<int64_t>(ns * iters_per_ns_ + 0.5);
  }
  double iters_per_ns() const { return iters_per_ns_; }

  // The loop: a dependent chain the compiler must keep.
  static void Spin(int64_t iters) {
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < iters; ++i) {
      x = x * 6364136223846793005ull + 1442695040888963407ull;
      asm volatile("" : "+r"(x));
    }
  }

 private:
  explicit BusyWork(double iters_per_ns) : iters_per_ns_(iters_per_ns) {}
  double iters_per_ns_;
};

// CPU time of every thread of this process, in ns: what a measurement
// burned, spinning included, beside the wall time it took.
inline int64_t ProcessCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

// What one measured run cost: wall and process CPU time over its units.
struct Cost {
  double wall_ns = 0;
  double cpu_ns = 0;
};

// Times `body` (which does `units` units of work) in wall and CPU time.
template <typename Body>
Cost Measure(double units, Body&& body) {
  int64_t cpu = ProcessCpuNs();
  int64_t wall = NowNs();
  body();
  return Cost{(NowNs() - wall) / units, (ProcessCpuNs() - cpu) / units};
}

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_BUSY_WORK_H_
