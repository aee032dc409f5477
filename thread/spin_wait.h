#ifndef ACTORFLOW_THREAD_SPIN_WAIT_H_
#define ACTORFLOW_THREAD_SPIN_WAIT_H_

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "thread/cpu_relax.h"

namespace actorflow::internal {

// How long a waiter spins before it parks, at most, while a CPU is free for
// it: waking a parked thread costs tens of microseconds on a VM (at times
// milliseconds), a spinning one sees a change in well under one. A spin
// shorter than a wake-up only adds the one to the other (the Channel's
// default too).
inline constexpr int64_t kDefaultSpinNs = 1'000'000;

// Who may spin. A thread that waits spins only while a CPU is free for it;
// otherwise it parks at once, and the thread it waits for gets the CPU:
//
// - The process's threads that are awake (running or spinning) number no
//   more than its usable CPUs (usable_cpus.h). The runtime's threads (a
//   Thread's loop, an engine worker) are counted from start to end except
//   while parked; any other waiter (a caller in Fetch) counts itself while
//   it spins. A spinner checks the count as it goes and parks when another
//   thread wakes past it.
// - A thread that finds it was descheduled while spinning for another
//   thread of the machine (a gap in its own clock readings, and the kernel
//   counts an involuntary switch: another process wanted its core) parks
//   at once in its waits for a while, from 1 ms doubling to 64 ms, and
//   halves that after each spin that was not disturbed. A gap without such
//   a switch (an interrupt, the hypervisor taking the virtual CPU) is no
//   sign that spinning costs anyone anything.
//
// No wait yields the CPU in a loop: under a CPU quota that only burns the
// quota, and it does nothing for a thread queued on another CPU.
namespace cpu_gate {

namespace detail {
inline std::atomic<int> awake{0};
// Counted threads among `awake` that spin waiting (past their first round
// of looks): they would give their CPU up to a thread with work.
inline std::atomic<int> spinning{0};
struct ThreadState {
  bool counted = false;
  int64_t quiet_until_ns = 0;  // parks at once before this
  int64_t backoff_ns = 0;
  int64_t involuntary_switches = -1;  // at the last look; -1: none yet
  bool woke_another = false;          // since its last wait began
  int64_t parked_at_ns = 0;           // counted threads, while parked
  int64_t short_spins_until_ns = 0;   // spins only kShortSpinNs before this
};
inline thread_local ThreadState state;
// Between two clock readings 64 pauses apart (a microsecond or two), a gap
// this long means the thread was off its CPU.
inline constexpr int64_t kDescheduledNs = 50'000;
inline constexpr int64_t kFirstBackoffNs = 1'000'000;
inline constexpr int64_t kMaxBackoffNs = 64'000'000;
// A park that ends this soon was waiting for a thread queued behind this
// one on its own CPU (a wake-up from another CPU takes longer on a VM): its
// spins only kept that thread from running. For a while after one, waits
// spin only briefly.
inline constexpr int64_t kShortParkNs = 30'000;
inline constexpr int64_t kShortSpinNs = 5'000;
inline constexpr int64_t kShortSpinsForNs = 2'000'000;

// Whether the kernel switched the calling thread out, while it could run,
// since the last call (the first call: since it started).
bool SwitchedOutSinceLastLook(ThreadState* me);

inline int64_t NowNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}
}  // namespace detail

// The calling thread is one of the runtime's: counted as awake until
// Leave, except between BeforePark and AfterWake.
inline void Join() {
  detail::state.counted = true;
  detail::awake.fetch_add(1, std::memory_order_relaxed);
}
inline void Leave() {
  if (!detail::state.counted) return;
  detail::state.counted = false;
  detail::awake.fetch_sub(1, std::memory_order_relaxed);
}
// Around a park (a futex, a condition variable) of the calling thread.
inline void BeforePark() {
  detail::ThreadState& me = detail::state;
  if (!me.counted) return;
  detail::awake.fetch_sub(1, std::memory_order_relaxed);
  me.parked_at_ns = detail::NowNs();
}
inline void AfterWake() {
  detail::ThreadState& me = detail::state;
  if (!me.counted) return;
  detail::awake.fetch_add(1, std::memory_order_relaxed);
  const int64_t now = detail::NowNs();
  if (now - me.parked_at_ns < detail::kShortParkNs) {
    me.short_spins_until_ns = now + detail::kShortSpinsForNs;
  }
}
// The calling thread has just woken a parked thread (a futex wake, a
// condition variable signal). The kernel often queues the woken thread on
// the waker's own CPU, behind it: the waker's next wait then first lets it
// run (one sched_yield, which returns at once when nothing is queued),
// rather than spin while the thread it waits for cannot run.
inline void NoteWoke() { detail::state.woke_another = true; }

// Threads awake now (observability and tests).
inline int Awake() { return detail::awake.load(std::memory_order_relaxed); }

// Whether the calling thread may poll now, for a wait that polls in its own
// way: the threads with work (awake, less those spinning for work, which
// give their CPU up as it starts) leave a CPU free for it among `usable`,
// and it is not backing off after being descheduled.
inline bool MaySpin(int usable) {
  const detail::ThreadState& me = detail::state;
  if (me.quiet_until_ns != 0 && detail::NowNs() < me.quiet_until_ns) {
    return false;
  }
  return detail::awake.load(std::memory_order_relaxed) -
             detail::spinning.load(std::memory_order_relaxed) +
             (me.counted ? 0 : 1) <=
         usable;
}

}  // namespace cpu_gate

// Spins until `ready()` holds, `spin_ns` has passed, or the CPU is wanted
// elsewhere (see cpu_gate above, for `usable` CPUs); true if `ready()`
// held. The caller parks when it returns false.
template <typename Ready>
bool SpinWhileCpuFree(Ready&& ready, int64_t spin_ns, int usable) {
  namespace gate = cpu_gate::detail;
  if (ready()) return true;
  if (spin_ns <= 0) return false;
  gate::ThreadState& me = gate::state;
  if (me.woke_another) {
    me.woke_another = false;
    sched_yield();
    if (ready()) return true;
  }
  // The clock is read only after a first round of looks: most waits end
  // within it, and a reading costs as much as an act (tens of ns on a VM).
  if (me.quiet_until_ns != 0 || me.short_spins_until_ns != 0) {
    const int64_t now = gate::NowNs();
    if (now < me.quiet_until_ns) return false;
    me.quiet_until_ns = 0;
    if (now < me.short_spins_until_ns) {
      spin_ns = std::min(spin_ns, gate::kShortSpinNs);
    } else {
      me.short_spins_until_ns = 0;
    }
  }
  // A waiter the gate does not count takes a CPU while it spins.
  if (!me.counted) gate::awake.fetch_add(1, std::memory_order_relaxed);
  bool held = false;
  bool descheduled = false;
  int64_t last = 0;  // the last clock reading; 0 before the first
  int64_t deadline = 0;
  bool marked_spinning = false;  // counted in gate::spinning
  while (gate::awake.load(std::memory_order_relaxed) <= usable) {
    for (int i = 0; i < 64; ++i) {
      if (ready()) {
        held = true;
        break;
      }
      CpuRelax();
    }
    if (held) break;
    const int64_t now = gate::NowNs();
    if (last == 0) {
      deadline = now + spin_ns;
      if (me.counted) {
        gate::spinning.fetch_add(1, std::memory_order_relaxed);
        marked_spinning = true;
      }
    } else if (now - last > gate::kDescheduledNs &&
               gate::SwitchedOutSinceLastLook(&me)) {
      descheduled = true;
      break;
    }
    if (now >= deadline) break;
    last = now;
  }
  if (!me.counted) {
    gate::awake.fetch_sub(1, std::memory_order_relaxed);
  } else if (marked_spinning) {
    gate::spinning.fetch_sub(1, std::memory_order_relaxed);
  }
  if (descheduled) {
    me.backoff_ns = me.backoff_ns == 0
                        ? gate::kFirstBackoffNs
                        : std::min(2 * me.backoff_ns, gate::kMaxBackoffNs);
    me.quiet_until_ns = gate::NowNs() + me.backoff_ns;
  } else {
    me.backoff_ns /= 2;
  }
  return held || ready();
}

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_SPIN_WAIT_H_
