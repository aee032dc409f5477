#ifndef ACTORFLOW_THREAD_SPIN_WAIT_H_
#define ACTORFLOW_THREAD_SPIN_WAIT_H_

#include <chrono>
#include <cstdint>
#include <thread>

#include "thread/cpu_relax.h"

namespace actorflow {

// How long a waiter spins before it parks: waking a parked thread costs
// tens of microseconds on a VM, a spinning one sees a change in well under
// one (the Channel's default too).
inline constexpr int64_t kDefaultSpinNs = 50'000;

// Spins until `ready()` holds or `spin_ns` has passed; true if it holds.
// Between bursts of pauses it yields the core, in case the thread it waits
// for is queued behind this one.
template <typename Ready>
bool SpinUntil(Ready&& ready, int64_t spin_ns = kDefaultSpinNs) {
  auto deadline =
      std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns);
  while (true) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) return true;
      CpuRelax();
    }
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::yield();
  }
}

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_SPIN_WAIT_H_
