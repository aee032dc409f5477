// The floor of a cross-core round trip: two threads take turns on one
// atomic counter, spinning with a pause, never parking.
#include <atomic>
#include <thread>
#include <vector>

#include "bench/peer_workloads.h"
#include "thread/cpu_relax.h"

namespace actorflow::internal::bench {

std::vector<double> AtomicPingPong(const PingPongSpec& spec) {
  alignas(64) std::atomic<int64_t> turn{0};
  const int64_t rounds = spec.rounds;
  std::thread echo([&] {
    for (int64_t r = 0; r < rounds; ++r) {
      while (turn.load(std::memory_order_acquire) != 2 * r + 1) CpuRelax();
      turn.store(2 * r + 2, std::memory_order_release);
    }
  });
  std::vector<int64_t> stamps;
  stamps.reserve(rounds + 1);
  stamps.push_back(NowNs());
  for (int64_t r = 0; r < rounds; ++r) {
    turn.store(2 * r + 1, std::memory_order_release);
    while (turn.load(std::memory_order_acquire) != 2 * r + 2) CpuRelax();
    stamps.push_back(NowNs());
  }
  echo.join();
  std::vector<double> rtt;
  for (size_t i = 1; i < stamps.size(); ++i) {
    rtt.push_back(stamps[i] - stamps[i - 1]);
  }
  return rtt;
}

}  // namespace actorflow::internal::bench
