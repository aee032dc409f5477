// The CPUs a process may use (actorflow/usable_cpus.h), read from cgroup v1
// and v2 layouts written under a directory of the test's own, from a real
// cgroup v1 group where this machine lets the test make one, and with
// ACTORFLOW_CPUS; and who may spin (thread/spin_wait.h).
#include "actorflow/usable_cpus.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/test_util.h"
#include "thread/spin_wait.h"

namespace actorflow::internal {
namespace {

namespace fs = std::filesystem;

void Write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

int Affinity() {
  cpu_set_t set;
  CPU_ZERO(&set);
  REQUIRE(sched_getaffinity(0, sizeof(set), &set) == 0);
  return CPU_COUNT(&set);
}

// A v1 layout: the cpu controller mounted at /sys/fs/cgroup/cpu,cpuacct,
// the process in /jobs/a/b; quotas given per directory.
fs::path V1Root(const std::string& name, const std::string& mount_root,
                const std::string& cgroup) {
  const fs::path root = testing::TestTempDir(name);
  Write(root / "proc/self/cgroup",
        "12:memory:/x\n4:cpu,cpuacct:" + cgroup + "\n0::/\n");
  Write(
      root / "proc/self/mountinfo",
      "25 1 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n"
      "31 25 0:27 " +
          mount_root +
          " /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup "
          "cgroup rw,cpu,cpuacct\n"
          "32 25 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  return root;
}

void V1Quota(const fs::path& dir, const std::string& quota,
             const std::string& period = "100000") {
  Write(dir / "cpu.cfs_quota_us", quota + "\n");
  Write(dir / "cpu.cfs_period_us", period + "\n");
}

TEST_CASE("no quota: the affinity mask's CPUs") {
  const fs::path root = V1Root("usable_none", "/", "/jobs/a");
  V1Quota(root / "sys/fs/cgroup/cpu,cpuacct/jobs/a", "-1");
  V1Quota(root / "sys/fs/cgroup/cpu,cpuacct", "-1");
  const UsableCpus cpus = DetectUsableCpus(root.string());
  CHECK(cpus.affinity == Affinity());
  CHECK(cpus.count == Affinity());
  CHECK(cpus.quota == 0);
  CHECK(cpus.source == "affinity");
  CHECK(cpus.online >= cpus.affinity);
  // Nothing to read at all: no quota, no error.
  const UsableCpus bare = DetectUsableCpus(testing::TestTempDir("usable_bare"));
  CHECK(bare.count == Affinity());
  CHECK(bare.quota == 0);
}

TEST_CASE("cgroup v1: the smallest quota of the group and its ancestors") {
  const fs::path root = V1Root("usable_v1", "/", "/jobs/a/b");
  const fs::path mount = root / "sys/fs/cgroup/cpu,cpuacct";
  V1Quota(mount / "jobs/a/b", "300000");  // 3 CPUs
  V1Quota(mount / "jobs/a", "50000");     // half a CPU: the smallest
  V1Quota(mount / "jobs", "-1");
  UsableCpus cpus = DetectUsableCpus(root.string());
  CHECK(cpus.quota == 0.5);
  CHECK(cpus.quota_file ==
        "/sys/fs/cgroup/cpu,cpuacct/jobs/a/cpu.cfs_quota_us");
  CHECK(cpus.count == 1);  // at least one
  CHECK(cpus.source == "cgroup quota");
  CHECK(cpus.ToString() ==
        "1 (affinity " + std::to_string(cpus.affinity) + " of " +
            std::to_string(cpus.online) +
            " online, cgroup quota 0.5 from "
            "/sys/fs/cgroup/cpu,cpuacct/jobs/a/cpu.cfs_quota_us; from cgroup "
            "quota)");
  // 1.5 CPUs: one thread can be kept busy without being throttled.
  V1Quota(mount / "jobs/a", "150000");
  cpus = DetectUsableCpus(root.string());
  CHECK(cpus.quota == 1.5);
  CHECK(cpus.count == 1);
  // A quota above the affinity mask changes nothing.
  V1Quota(mount / "jobs/a", "6400000");
  V1Quota(mount / "jobs/a/b", "-1");
  cpus = DetectUsableCpus(root.string());
  CHECK(cpus.quota == 64);
  CHECK(cpus.count == Affinity());
  CHECK(cpus.source == "affinity");
}

TEST_CASE("cgroup v1 in a container: the mount shows part of the tree") {
  // The container sees its own group as the mount's root.
  const fs::path root =
      V1Root("usable_container", "/docker/abc", "/docker/abc");
  V1Quota(root / "sys/fs/cgroup/cpu,cpuacct", "100000", "100000");
  const UsableCpus cpus = DetectUsableCpus(root.string());
  CHECK(cpus.quota == 1);
  CHECK(cpus.count == 1);
}

TEST_CASE("cgroup v2: cpu.max of the group and its ancestors") {
  const fs::path root = testing::TestTempDir("usable_v2");
  Write(root / "proc/self/cgroup", "0::/user.slice/job\n");
  Write(root / "proc/self/mountinfo",
        "30 1 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n");
  const fs::path mount = root / "sys/fs/cgroup";
  Write(mount / "user.slice/job/cpu.max", "max 100000\n");
  Write(mount / "user.slice/cpu.max", "250000 100000\n");
  UsableCpus cpus = DetectUsableCpus(root.string());
  CHECK(cpus.quota == 2.5);
  CHECK(cpus.quota_file == "/sys/fs/cgroup/user.slice/cpu.max");
  CHECK(cpus.count == std::min(2, Affinity()));
  Write(mount / "user.slice/job/cpu.max", "100000 100000\n");
  cpus = DetectUsableCpus(root.string());
  CHECK(cpus.quota == 1);
  CHECK(cpus.count == 1);
  CHECK(cpus.quota_file == "/sys/fs/cgroup/user.slice/job/cpu.max");
}

TEST_CASE("threads busy elsewhere: the fewest runnable, less the caller") {
  const fs::path root = testing::TestTempDir("usable_busy");
  Write(root / "proc/stat",
        "cpu  1 2 3 4\nintr 5\nprocs_running 3\nprocs_blocked 0\n");
  // A core busy in every look keeps the looks going across their whole
  // window (nanosleep sleeps at least as long as asked): a thread that runs
  // for a few milliseconds (a kernel worker, a short job) is not taken for
  // a busy core, which would cost a session half its threads for life.
  const auto start = std::chrono::steady_clock::now();
  CHECK(BusyElsewhere(root.string()) == 2);
  CHECK(std::chrono::steady_clock::now() - start >=
        std::chrono::milliseconds(9));
  Write(root / "proc/stat", "procs_running 1\n");
  CHECK(BusyElsewhere(root.string()) == 0);
  // Nothing to read: nothing known to be busy.
  CHECK(BusyElsewhere(testing::TestTempDir("usable_busy_none")) == 0);
  // A thread of this process that spins all the while is counted.
  std::atomic<bool> stop{false};
  std::atomic<bool> started{false};
  std::thread burner([&] {
    started = true;
    while (!stop.load()) {
    }
  });
  while (!started.load()) std::this_thread::yield();
  CHECK(BusyElsewhere() >= 1);
  stop = true;
  burner.join();
}

TEST_CASE("shared threads: the count less the CPUs busy elsewhere, >= 1") {
  UsableCpus cpus;
  cpus.count = 4;
  CHECK(cpus.SharedThreads() == 4);
  cpus.busy_elsewhere = 1;
  CHECK(cpus.SharedThreads() == 3);
  cpus.count = 2;
  CHECK(cpus.SharedThreads() == 1);
  cpus.busy_elsewhere = 5;
  CHECK(cpus.SharedThreads() == 1);
}

TEST_CASE("ACTORFLOW_CPUS and SessionOptions override the count") {
  REQUIRE(unsetenv(kUsableCpusEnv) == 0);
  absl::StatusOr<UsableCpus> cpus = ResolveUsableCpus();
  REQUIRE(cpus.ok());
  // Without an override: what the mask and quota allow, whatever the load
  // (other tests may be running); the CPUs busy elsewhere only narrow the
  // threads that streams beyond the count share.
  const int detected = DetectUsableCpus().count;
  CHECK(cpus->count == detected);
  CHECK(cpus->SharedThreads() == std::max(1, detected - cpus->busy_elsewhere));
  REQUIRE(setenv(kUsableCpusEnv, "7", 1) == 0);
  cpus = ResolveUsableCpus();
  REQUIRE(cpus.ok());
  CHECK(cpus->count == 7);
  CHECK(cpus->source == "ACTORFLOW_CPUS");
  cpus = ResolveUsableCpus(3);  // the session's own wins
  REQUIRE(cpus.ok());
  CHECK(cpus->count == 3);
  CHECK(cpus->source == "SessionOptions");
  for (const char* bad : {"0", "two", "-1", "1.5"}) {
    REQUIRE(setenv(kUsableCpusEnv, bad, 1) == 0);
    cpus = ResolveUsableCpus();
    REQUIRE_FALSE(cpus.ok());
    CHECK(cpus.status().message() ==
          std::string("ACTORFLOW_CPUS='") + bad +
              "': give a whole number of CPUs >= 1, or unset it to use what "
              "the affinity mask and the cgroup quota allow");
  }
  REQUIRE(unsetenv(kUsableCpusEnv) == 0);
}

// A real group under the cgroup v1 cpu controller (as root, where it is
// mounted writable): a child process moved into it reads its quota.
TEST_CASE("a real cgroup v1 quota is found") {
  const fs::path cpu = "/sys/fs/cgroup/cpu";
  const fs::path group =
      cpu / ("actorflow_usable_cpus_test_" + std::to_string(getpid()));
  std::error_code error;
  if (!fs::exists(cpu / "cpu.cfs_quota_us") ||
      !fs::create_directory(group, error)) {
    std::printf("SKIPPED: no writable cgroup v1 cpu controller here (%s)\n",
                error ? error.message().c_str() : "not mounted");
    return;
  }
  std::ofstream(group / "cpu.cfs_period_us") << "100000";
  std::ofstream(group / "cpu.cfs_quota_us") << "100000";
  int pipe_fds[2];
  REQUIRE(pipe(pipe_fds) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    { std::ofstream(group / "cgroup.procs") << getpid(); }
    const UsableCpus cpus = DetectUsableCpus();
    const int answer[2] = {cpus.count, static_cast<int>(cpus.quota * 1000)};
    (void)!write(pipe_fds[1], answer, sizeof(answer));
    _exit(0);
  }
  int answer[2] = {0, 0};
  REQUIRE(read(pipe_fds[0], answer, sizeof(answer)) == sizeof(answer));
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  close(pipe_fds[0]);
  close(pipe_fds[1]);
  fs::remove(group, error);  // empty again: its one process has exited
  CHECK(answer[1] == 1000);
  CHECK(answer[0] == 1);
  CHECK_FALSE(fs::exists(group));
}

TEST_CASE("a waiter spins only while a CPU is free for it") {
  using Clock = std::chrono::steady_clock;
  const int before = cpu_gate::Awake();
  // No CPU free (usable 0): it parks at once, however long it could spin.
  const auto start = Clock::now();
  CHECK_FALSE(SpinWhileCpuFree([] { return false; }, 5'000'000'000, 0));
  CHECK(Clock::now() - start < std::chrono::seconds(1));
  CHECK_FALSE(cpu_gate::MaySpin(0));
  // A CPU free: it sees what another thread does while it spins (the
  // setter waits until the waiter counts itself as spinning). A waiter the
  // kernel switches out for another thread (other tests run beside this
  // one) stops early and backs off, by design: it then spins again.
  std::atomic<bool> flag{false};
  std::thread setter([&] {
    while (cpu_gate::Awake() == before) std::this_thread::yield();
    flag.store(true);
  });
  bool seen = false;
  while (!seen) {
    seen =
        SpinWhileCpuFree([&] { return flag.load(); }, 5'000'000'000, 1 << 20);
  }
  setter.join();
  CHECK(seen);
  CHECK(cpu_gate::Awake() == before);  // an uncounted waiter leaves no trace
  // Counted threads: awake from Join to Leave, but not while parked.
  std::atomic<int> stage{0};
  std::thread counted([&] {
    cpu_gate::Join();
    stage.store(1);
    while (stage.load() != 2) std::this_thread::yield();
    cpu_gate::BeforePark();
    stage.store(3);
    while (stage.load() != 4) std::this_thread::yield();
    cpu_gate::AfterWake();
    cpu_gate::Leave();
    stage.store(5);
  });
  while (stage.load() != 1) std::this_thread::yield();
  CHECK(cpu_gate::Awake() == before + 1);
  // With usable = before + 1 CPUs, an uncounted waiter would make one too
  // many. (Asked from a fresh thread: this one may be backing off after
  // being switched out above.)
  bool may_spin[2] = {true, false};
  std::thread([&] {
    may_spin[0] = cpu_gate::MaySpin(before + 1);
    may_spin[1] = cpu_gate::MaySpin(before + 2);
  }).join();
  CHECK_FALSE(may_spin[0]);
  CHECK(may_spin[1]);
  stage.store(2);
  while (stage.load() != 3) std::this_thread::yield();
  CHECK(cpu_gate::Awake() == before);
  stage.store(4);
  while (stage.load() != 5) std::this_thread::yield();
  counted.join();
  CHECK(cpu_gate::Awake() == before);
}

}  // namespace
}  // namespace actorflow::internal
