#include "actorflow/usable_cpus.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

int AffinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return 0;
  return CPU_COUNT(&set);
}

// One cgroup hierarchy the CPU controller lives in: where it is mounted,
// the part of the hierarchy that mount shows, and the process's cgroup.
struct Hierarchy {
  bool v2 = false;
  std::string mount_point;
  std::string mount_root;
  std::string cgroup;  // the process's path in the hierarchy
};

bool HasController(absl::string_view list, absl::string_view controller) {
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    if (item == controller) return true;
  }
  return false;
}

// The hierarchies that may carry a CPU quota: v1's with the cpu
// controller, and v2's unified one.
std::vector<Hierarchy> CpuHierarchies(const std::string& root) {
  std::string v1_cgroup, v2_cgroup;
  bool has_v1 = false, has_v2 = false;
  for (absl::string_view line :
       absl::StrSplit(ReadFile(root + "/proc/self/cgroup"), '\n')) {
    std::vector<absl::string_view> parts = absl::StrSplit(line, ':');
    if (parts.size() < 3) continue;
    // The path may hold colons: it is everything after the second.
    const std::string path(line.substr(parts[0].size() + parts[1].size() + 2));
    if (parts[0] == "0" && parts[1].empty()) {
      v2_cgroup = path;
      has_v2 = true;
    } else if (HasController(parts[1], "cpu")) {
      v1_cgroup = path;
      has_v1 = true;
    }
  }
  std::vector<Hierarchy> found;
  for (absl::string_view line :
       absl::StrSplit(ReadFile(root + "/proc/self/mountinfo"), '\n')) {
    std::vector<absl::string_view> fields =
        absl::StrSplit(line, ' ', absl::SkipEmpty());
    size_t dash = 0;
    while (dash < fields.size() && fields[dash] != "-") ++dash;
    // ... root mount_point options [optional...] - type source super_options
    if (dash < 5 || dash + 4 > fields.size()) continue;
    const absl::string_view type = fields[dash + 1];
    const absl::string_view options = fields[dash + 3];
    Hierarchy h;
    h.mount_root = std::string(fields[3]);
    h.mount_point = std::string(fields[4]);
    if (type == "cgroup2" && has_v2) {
      h.v2 = true;
      h.cgroup = v2_cgroup;
    } else if (type == "cgroup" && has_v1 && HasController(options, "cpu")) {
      h.cgroup = v1_cgroup;
    } else {
      continue;
    }
    found.push_back(std::move(h));
  }
  return found;
}

// The quota a cgroup directory states, in CPUs; 0 when none.
double QuotaIn(const std::string& dir, bool v2) {
  if (v2) {
    std::vector<std::string> parts =
        absl::StrSplit(absl::StripAsciiWhitespace(ReadFile(dir + "/cpu.max")),
                       ' ', absl::SkipEmpty());
    double quota = 0, period = 0;
    if (parts.size() != 2 || !absl::SimpleAtod(parts[0], &quota) ||
        !absl::SimpleAtod(parts[1], &period) || quota <= 0 || period <= 0) {
      return 0;  // "max": no limit
    }
    return quota / period;
  }
  double quota = 0, period = 0;
  if (!absl::SimpleAtod(
          absl::StripAsciiWhitespace(ReadFile(dir + "/cpu.cfs_quota_us")),
          &quota) ||
      !absl::SimpleAtod(
          absl::StripAsciiWhitespace(ReadFile(dir + "/cpu.cfs_period_us")),
          &period) ||
      quota <= 0 || period <= 0) {
    return 0;  // -1: no limit
  }
  return quota / period;
}

int ProcsRunning(const std::string& root) {
  for (absl::string_view line :
       absl::StrSplit(ReadFile(root + "/proc/stat"), '\n')) {
    int running = 0;
    if (absl::ConsumePrefix(&line, "procs_running ") &&
        absl::SimpleAtoi(line, &running)) {
      return running;
    }
  }
  return -1;
}

}  // namespace

int BusyElsewhere(const std::string& root) {
  // The fewest over looks spread across ten milliseconds: a thread that ran
  // for only part of that time (a wake-up, a kernel worker, a short job) is
  // not counted. The count decides a session's threads for its life, so a
  // look must not mistake a passing thread for a busy core: over one
  // millisecond, about 1 look in 200 on an idle 2-CPU VM saw one (and its
  // session ran on half its threads); over ten, about 1 in 2,000.
  int fewest = -1;
  for (int look = 0; look < 8; ++look) {
    if (look > 0) {
      timespec pause{0, 1'400'000};
      nanosleep(&pause, nullptr);
    }
    const int running = ProcsRunning(root);
    if (running < 0) return 0;
    if (fewest < 0 || running < fewest) fewest = running;
    // The caller alone: no look can count fewer (an idle machine pays for
    // one read of /proc/stat, not ten milliseconds).
    if (fewest <= 1) break;
  }
  return std::max(0, fewest - 1);  // the caller runs too
}

std::string UsableCpus::ToString() const {
  std::string text =
      absl::StrCat(count, " (affinity ", affinity, " of ", online, " online, ");
  if (quota > 0) {
    absl::StrAppend(&text, "cgroup quota ", quota, " from ", quota_file);
  } else {
    absl::StrAppend(&text, "no cgroup quota");
  }
  if (busy_elsewhere > 0) {
    absl::StrAppend(&text, ", ", busy_elsewhere, " busy elsewhere");
  }
  absl::StrAppend(&text, "; from ", source, ")");
  return text;
}

UsableCpus DetectUsableCpus(const std::string& root) {
  UsableCpus cpus;
  cpus.online = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
  cpus.affinity = AffinityCpus();
  if (cpus.affinity <= 0) cpus.affinity = std::max(1, cpus.online);
  for (const Hierarchy& h : CpuHierarchies(root)) {
    std::string relative = h.cgroup;
    if (h.mount_root != "/" && relative.rfind(h.mount_root, 0) == 0) {
      relative = relative.substr(h.mount_root.size());
    }
    const std::string top = root + h.mount_point;
    std::string dir = top + (relative == "/" ? "" : relative);
    // The cgroup and every ancestor up to the mount: the smallest wins.
    while (true) {
      const double quota = QuotaIn(dir, h.v2);
      if (quota > 0 && (cpus.quota == 0 || quota < cpus.quota)) {
        cpus.quota = quota;
        cpus.quota_file = (h.v2 ? dir + "/cpu.max" : dir + "/cpu.cfs_quota_us")
                              .substr(root.size());
      }
      if (dir.size() <= top.size()) break;
      dir = dir.substr(0, dir.rfind('/'));
      if (dir.size() < top.size()) break;
    }
  }
  cpus.count = cpus.affinity;
  cpus.source = "affinity";
  if (cpus.quota > 0) {
    const int by_quota = std::max(1, static_cast<int>(std::floor(cpus.quota)));
    if (by_quota < cpus.count) {
      cpus.count = by_quota;
      cpus.source = "cgroup quota";
    }
  }
  return cpus;
}

absl::StatusOr<UsableCpus> ResolveUsableCpus(int override_count,
                                             bool look_for_busy) {
  UsableCpus cpus = DetectUsableCpus();
  if (override_count > 0) {
    cpus.count = override_count;
    cpus.source = "SessionOptions";
    return cpus;
  }
  const char* env = std::getenv(kUsableCpusEnv);
  if (env == nullptr || *env == '\0') {
    if (look_for_busy) LookForBusy(&cpus);
    return cpus;
  }
  int count = 0;
  if (!absl::SimpleAtoi(env, &count) || count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(kUsableCpusEnv, "='", env,
                     "': give a whole number of CPUs >= 1, or unset it to "
                     "use what the affinity mask and the cgroup quota allow"));
  }
  cpus.count = count;
  cpus.source = kUsableCpusEnv;
  return cpus;
}

void LookForBusy(UsableCpus* cpus) {
  if (cpus->source == "SessionOptions" || cpus->source == kUsableCpusEnv) {
    return;  // a count given is taken as it is
  }
  cpus->busy_elsewhere = BusyElsewhere();
}

const UsableCpus& ProcessUsableCpus() {
  static const UsableCpus* cpus = [] {
    absl::StatusOr<UsableCpus> resolved =
        ResolveUsableCpus(0, /*look_for_busy=*/false);
    if (resolved.ok()) return new UsableCpus(*resolved);
    std::fprintf(stderr, "actorflow: %s; ignored\n",
                 std::string(resolved.status().message()).c_str());
    return new UsableCpus(DetectUsableCpus());
  }();
  return *cpus;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
