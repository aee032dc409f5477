#ifndef ACTORFLOW_USABLE_CPUS_H_
#define ACTORFLOW_USABLE_CPUS_H_

#include <string>

#include "absl/status/statusor.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// How many CPUs this process may keep busy at once, and where that figure
// comes from. The runtime sizes its spinning by `count`: a thread that
// waits spins only while the threads awake number no more than it
// (spin_wait.h). A plan with more CPU streams than `SharedThreads()` runs
// them on that many threads.
struct UsableCpus {
  // What the runtime plans with: an override when given, else the CPUs of
  // the affinity mask, fewer under a cgroup CPU quota (rounded down: a
  // quota of 1.5 CPUs keeps one thread busy without being throttled).
  // Always >= 1. It depends on the machine's settings only, never on its
  // load: waits size their spinning by it (the load they see as it
  // changes); how many threads a plan's streams get also depends on
  // `busy_elsewhere`, the load as the session is made.
  int count = 1;
  int online = 0;    // CPUs the system has online
  int affinity = 0;  // CPUs in the process's affinity mask
  // The smallest CPU quota over the process's cgroup and its ancestors, in
  // CPUs (quota / period), cgroup v1 (cpu.cfs_quota_us, cpu.cfs_period_us)
  // or v2 (cpu.max); 0 when none is set.
  double quota = 0;
  std::string quota_file;  // where the smallest quota was read
  // Threads of other processes (or other threads of this one) that kept
  // running the whole time it looked (the fewest runnable threads the
  // kernel counted over about ten milliseconds, less the caller): a
  // process burning a core, a trainer beside a pipeline. 0 when nobody
  // looked (LookForBusy) or the count was given.
  int busy_elsewhere = 0;
  // What set `count`: "affinity", "cgroup quota", "ACTORFLOW_CPUS" or
  // "SessionOptions".
  std::string source;

  // The threads that CPU streams beyond `count` share: `count` less the
  // CPUs busy elsewhere, at least 1. A thread whose CPU another process
  // keeps busy holds up every stream on it for a time slice; fewer threads
  // than CPUs leave the busy one to its owner.
  int SharedThreads() const {
    return busy_elsewhere < count ? count - busy_elsewhere : 1;
  }

  // "2 (affinity 2 of 2 online, no cgroup quota)"
  std::string ToString() const;
};

// Reads the affinity mask and the cgroup quota. `root` stands for "/" when
// the files are read (/proc/self/cgroup, /proc/self/mountinfo, the cgroup
// files): tests give a directory of their own. Missing or unreadable files
// mean no quota, never an error.
UsableCpus DetectUsableCpus(const std::string& root = "");

// The environment variable that overrides the count for every session and
// engine of the process: a whole number >= 1.
inline constexpr char kUsableCpusEnv[] = "ACTORFLOW_CPUS";

// DetectUsableCpus, then `override_count` when > 0 (SessionOptions'), else
// ACTORFLOW_CPUS when set, else (with `look_for_busy`) it also counts the
// CPUs busy elsewhere now, looking as a session does when it is made (once
// on an idle machine, else for about ten milliseconds). A malformed
// ACTORFLOW_CPUS is an error naming it.
absl::StatusOr<UsableCpus> ResolveUsableCpus(int override_count = 0,
                                             bool look_for_busy = true);

// The threads that kept running over about ten milliseconds besides the
// caller, by the kernel's count of runnable threads (/proc/stat's
// procs_running under `root`); 0 when it cannot tell.
int BusyElsewhere(const std::string& root = "");

// Sets `cpus->busy_elsewhere` from BusyElsewhere() (up to ten milliseconds),
// unless the count was given (SessionOptions, ACTORFLOW_CPUS): what
// ResolveUsableCpus does with `look_for_busy`, for a caller that knows only
// later whether it needs the figure.
void LookForBusy(UsableCpus* cpus);

// The process's figure (detected once, ACTORFLOW_CPUS applied, without
// looking for busy CPUs; a malformed value is reported on stderr once and
// ignored): what the engine's default worker count, the default thread
// pool and waits outside any session use.
const UsableCpus& ProcessUsableCpus();

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_USABLE_CPUS_H_
