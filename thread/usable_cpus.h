#ifndef ACTORFLOW_THREAD_USABLE_CPUS_H_
#define ACTORFLOW_THREAD_USABLE_CPUS_H_

#include <string>

#include "absl/status/statusor.h"

namespace actorflow {

// How many CPUs this process may keep busy at once, and where that figure
// comes from. The runtime sizes its threads and its spinning by `count`:
// a thread that waits spins only while the threads awake number no more
// than it (cpu_gate.h), and a plan's CPU streams share that many threads
// at most.
struct UsableCpus {
  // What the runtime plans with: an override when given, else the CPUs of
  // the affinity mask, fewer under a cgroup CPU quota (rounded down, at
  // least 1: a quota of 1.5 CPUs keeps one thread busy without being
  // throttled). Always >= 1.
  int count = 1;
  int online = 0;    // CPUs the system has online
  int affinity = 0;  // CPUs in the process's affinity mask
  // The smallest CPU quota over the process's cgroup and its ancestors, in
  // CPUs (quota / period), cgroup v1 (cpu.cfs_quota_us, cpu.cfs_period_us)
  // or v2 (cpu.max); 0 when none is set.
  double quota = 0;
  std::string quota_file;  // where the smallest quota was read
  // "affinity", "cgroup quota", "ACTORFLOW_CPUS" or "SessionOptions"
  std::string source;

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
// ACTORFLOW_CPUS when set. A malformed ACTORFLOW_CPUS is an error naming it.
absl::StatusOr<UsableCpus> ResolveUsableCpus(int override_count = 0);

// The process's figure (detected once, ACTORFLOW_CPUS applied; a malformed
// value is reported on stderr once and ignored): what the engine's default
// worker count, the default thread pool and waits outside any session use.
const UsableCpus& ProcessUsableCpus();

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_USABLE_CPUS_H_
