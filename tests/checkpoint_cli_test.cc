// Checkpoints as a user meets them on the command line: `actorflow run`
// and `actorflow launch` with --checkpoint-dir/--checkpoint-every/--resume,
// and the MNIST example's. Runs killed with SIGKILL at random moments
// (seeded, printed) and resumed end with the results of runs never killed;
// a crash between any two steps of writing leaves a usable checkpoint; bad
// checkpoints and flags get clear errors.
#include <dirent.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/checkpoint.h"
#include "tests/cli_util.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

using testing::Contains;
using testing::Field;
using testing::RunCli;
using testing::Runfile;

const std::string kQuickstart = "examples/plans/quickstart.pbtxt";
// `actorflow run` of the quickstart.
const std::string kRunQuickstart = "run " + kQuickstart;
const std::string kThreeMachines = "examples/plans/three_machines.pbtxt";

std::string Plans() { return Runfile(""); }

// `binary ARGS` in a process of its own, stdout and stderr into `out`.
pid_t Spawn(const std::string& binary, const std::string& args,
            const std::string& out, const std::string& env = "") {
  const std::string command =
      absl::StrCat("cd '", Plans(), "' && ", env, " exec '", Runfile(binary),
                   "' ", args, " >'", out, "' 2>&1");
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", command.c_str(), nullptr);
    _exit(127);
  }
  return pid;
}

std::string LastLine(const std::string& path) {
  std::ifstream in(path);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}

// The processes whose parent is `parent`.
std::vector<pid_t> Children(pid_t parent) {
  std::vector<pid_t> children;
  DIR* proc = opendir("/proc");
  if (proc == nullptr) return children;
  while (dirent* entry = readdir(proc)) {
    const pid_t pid = static_cast<pid_t>(std::atoi(entry->d_name));
    if (pid <= 0) continue;
    std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
    std::string text((std::istreambuf_iterator<char>(stat)),
                     std::istreambuf_iterator<char>());
    const size_t close = text.rfind(')');
    if (close == std::string::npos) continue;
    char state = 0;
    int ppid = 0;
    if (std::sscanf(text.c_str() + close + 1, " %c %d", &state, &ppid) == 2 &&
        ppid == parent) {
      children.push_back(pid);
    }
  }
  closedir(proc);
  return children;
}

// Every process under `root` (itself included), one line each: pid, state,
// what it waits in (wchan), its command line.
std::string ProcessTree(pid_t root) {
  std::string text;
  std::vector<pid_t> todo = {root};
  while (!todo.empty()) {
    const pid_t pid = todo.back();
    todo.pop_back();
    std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
    std::string line;
    std::getline(stat, line);
    std::ifstream wchan(absl::StrCat("/proc/", pid, "/wchan"));
    std::string waits;
    std::getline(wchan, waits);
    std::ifstream cmdline(absl::StrCat("/proc/", pid, "/cmdline"));
    std::string args((std::istreambuf_iterator<char>(cmdline)),
                     std::istreambuf_iterator<char>());
    for (char& c : args) c = c == '\0' ? ' ' : c;
    absl::StrAppend(&text, line.substr(0, line.find(' ', line.find(')') + 3)),
                    " wchan=", waits, " ", args, "\n");
    for (pid_t child : Children(pid)) todo.push_back(child);
  }
  return text;
}

// Waits for `pid`. A run that has not ended `limit` after it was killed or
// ran out is a hang: the test fails with the process tree and the run's
// output instead of running into its timeout, and kills what is left.
int WaitBounded(pid_t pid, std::chrono::seconds limit, const std::string& out) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) != pid) {
    if (std::chrono::steady_clock::now() > deadline) {
      const std::string tree = ProcessTree(pid);
      std::ifstream in(out);
      const std::string output((std::istreambuf_iterator<char>(in)),
                               std::istreambuf_iterator<char>());
      for (pid_t child : Children(pid)) kill(child, SIGKILL);
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      FAIL("still running " << limit.count() << " s on:\n"
                            << tree << "its output:\n"
                            << output);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return status;
}

// When and how often to crash a run: after it wrote a checkpoint, within
// these fractions of the time a whole run takes from its first checkpoint
// to its last.
struct Crashes {
  double from = 0;
  double to = 0.7;
  int at_most = 30;         // runs killed; the next one is left to finish
  bool kill_child = false;  // a child of the process (a rank), not itself
  std::string watch;        // where checkpoints appear (default: `dir`)
};

// Runs `binary ARGS` (with --resume, checkpoints under `dir`) once whole,
// to time it; then, from nothing again, kills it with SIGKILL at a random
// moment of `crashes`' window and runs it again, until one run gets
// through. Returns that run's last line; `kills` counts the runs killed.
std::string RunUntilDone(const std::string& binary, const std::string& args,
                         const std::string& dir, std::mt19937_64* random,
                         const Crashes& crashes, int* kills) {
  const std::string out = std::string(std::getenv("TEST_TMPDIR")) + "/run.out";
  const std::string watch = crashes.watch.empty() ? dir : crashes.watch;
  auto newest = [&] {
    auto list = ListCheckpoints(watch);
    return list.ok() && !list->empty() ? list->back().first : -1;
  };
  // The whole run, timed from its first checkpoint to its last: the
  // crashes fall in that part.
  const auto t0 = std::chrono::steady_clock::now();
  auto since = [&] {
    return std::chrono::duration_cast<std::chrono::microseconds>(
               std::chrono::steady_clock::now() - t0)
        .count();
  };
  const pid_t timed = Spawn(binary, args, out);
  int status = 0;
  int64_t first_us = -1, last_us = 0, seen = -1;
  while (waitpid(timed, &status, WNOHANG) != timed) {
    if (newest() != seen) {
      seen = newest();
      if (first_us < 0) first_us = since();
      last_us = since();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const int64_t after_first_us = last_us - std::max<int64_t>(first_us, 0);
  INFO(LastLine(out));
  REQUIRE((WIFEXITED(status) && WEXITSTATUS(status) == 0));
  std::filesystem::remove_all(dir);
  int64_t from = static_cast<int64_t>(after_first_us * crashes.from);
  int64_t window = std::max<int64_t>(
      1000, static_cast<int64_t>(after_first_us * (crashes.to - crashes.from)));
  for (int attempt = 0; attempt <= crashes.at_most; ++attempt) {
    const int64_t before = newest();
    const pid_t pid = Spawn(binary, args, out);
    bool exited = false;
    if (attempt < crashes.at_most) {
      // The crash comes once this run has written a checkpoint (so every
      // run gets somewhere), at a random moment after that. Polling the
      // directory only picks the moment: the runs wait for nothing.
      while (newest() <= before) {
        if (waitpid(pid, &status, WNOHANG) == pid) {
          exited = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
      }
    }
    if (!exited && attempt < crashes.at_most) {
      std::this_thread::sleep_for(std::chrono::microseconds(
          from + static_cast<int64_t>((*random)() % window)));
      pid_t victim = pid;
      if (crashes.kill_child) {
        std::vector<pid_t> children = Children(pid);
        if (!children.empty()) victim = children[(*random)() % children.size()];
      }
      kill(victim, SIGKILL);
    }
    // A killed launcher's ranks die with it; a killed rank's launcher
    // stops the others within --peer-timeout and 10 s: 60 s is a hang.
    if (!exited) status = WaitBounded(pid, std::chrono::seconds(60), out);
    const std::string last = LastLine(out);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
      if (*kills > 0 || attempt == crashes.at_most) return last;
      // Quicker than the timed run, it ended before its crash: nothing was
      // resumed yet. From nothing again, crashing sooner.
      from /= 2;
      window = std::max<int64_t>(window / 2, 1000);
      std::filesystem::remove_all(dir);
      continue;
    }
    ++*kills;
    // A killed rank fails the job; the launcher then says so and exits 1.
    INFO(last);
    REQUIRE((WIFSIGNALED(status) || WEXITSTATUS(status) == 1));
  }
  FAIL("no run got through");
  return "";
}

// source -> spin 200 us (its own thread) -> checksum: a run whose time is
// its kernels', not the threads' scheduling.
std::string SpinPlan() {
  const std::string path =
      std::string(std::getenv("TEST_TMPDIR")) + "/spin.pbtxt";
  std::ofstream(path) << R"(
total_piece_num: 2500
task {
  task_id: 1 name: "source" stream { stream_index: 0 }
  kernel { op_type: "source" attr { key: "step" value { f: 0.5 } } }
  produced_regst_desc { key: "out" value {
    regst_desc_id: 10 producer_task_id: 1 consumer_task_id: 2
    register_num: 2 elem_cnt: 64 } }
}
task {
  task_id: 2 name: "spin" stream { stream_index: 1 }
  kernel { op_type: "spin" attr { key: "us" value { i: 200 } } }
  consumed_regst_desc_id { key: "in" value { regst_desc_id: 10 } }
  produced_regst_desc { key: "out" value {
    regst_desc_id: 20 producer_task_id: 2 consumer_task_id: 3
    register_num: 2 elem_cnt: 64 } }
}
task {
  task_id: 3 name: "sink" stream { stream_index: 0 }
  kernel { op_type: "checksum" }
  consumed_regst_desc_id { key: "in" value { regst_desc_id: 20 } }
}
)";
  return path;
}

TEST_CASE("actorflow run: killed at random moments, resumed, same sinks",
          "[checkpoint]") {
  const uint64_t seed = testing::TestSeed("actorflow run SIGKILL");
  std::mt19937_64 random(seed);
  const std::string dir = testing::TestTempDir("cli_kill");
  const std::string args = absl::StrCat("run ", SpinPlan());
  auto whole = RunCli(args + " --no-progress", Plans());
  REQUIRE(whole.exit_code == 0);
  int kills = 0;
  const std::string resumed = RunUntilDone(
      "actorflow",
      absl::StrCat(args, " --no-progress --checkpoint-dir=", dir,
                   " --checkpoint-every=200 --keep-last=2 --resume"),
      dir, &random, Crashes{.to = 0.5}, &kills);
  std::printf("actorflow run: %d runs killed\n", kills);
  CHECK(kills > 0);
  INFO(resumed);
  CHECK(Field(resumed, "status") == "\"ok\"");
  CHECK(testing::Field(resumed, "checksum") ==
        testing::Field(whole.last_line, "checksum"));
  CHECK(Contains(resumed, "\"sink\":{\"pieces\":2500,"));
  CHECK(Contains(resumed, "\"in_order\":true"));
  CHECK(!Field(resumed, "resumed_from").empty());
  // Resuming a finished run runs nothing and reports the same.
  auto again = RunCli(
      absl::StrCat(args, " --checkpoint-dir=", dir, " --resume --no-progress"),
      Plans());
  CHECK(Field(again.last_line, "resumed_from") == "2500");
  CHECK(Field(again.last_line, "checksum") == Field(resumed, "checksum"));
}

TEST_CASE("a crash between any two steps of writing leaves a usable one",
          "[checkpoint]") {
  const std::string dir = testing::TestTempDir("cli_crash_steps");
  const std::string flags =
      " --no-progress --checkpoint-every=300 --keep-last=2 --checkpoint-dir=";
  auto whole = RunCli(kRunQuickstart + " --no-progress", Plans());
  REQUIRE(whole.exit_code == 0);
  for (int s = 0; s < kNumCheckpointSteps; ++s) {
    const std::string step = kCheckpointSteps[s];
    INFO("crash after step " << step << " of the second checkpoint");
    std::filesystem::remove_all(dir);
    auto crashed = RunCli(kRunQuickstart + flags + dir, Plans(),
                          "ACTORFLOW_CHECKPOINT_CRASH_AT=" + step + ":2 ");
    CHECK(crashed.exit_code == 128 + SIGKILL);
    CHECK(Contains(crashed.err, "ACTORFLOW_CHECKPOINT_CRASH_AT=" + step));
    auto newest = ResolveCheckpoint(dir);
    REQUIRE(newest.ok());
    // Until it is renamed into place the new one does not exist; after,
    // it is whole.
    const bool renamed = s >= 6;
    CHECK(*newest == CheckpointPath(dir, renamed ? 600 : 300));
    REQUIRE(ReadCheckpoint(*newest).ok());
    auto resumed = RunCli(kRunQuickstart + flags + dir + " --resume", Plans());
    INFO(resumed.err);
    CHECK(resumed.exit_code == 0);
    CHECK(Field(resumed.last_line, "resumed_from") ==
          (renamed ? "600" : "300"));
    CHECK(Field(resumed.last_line, "checksum") ==
          Field(whole.last_line, "checksum"));
  }
}

TEST_CASE("bad checkpoints and flags get clear errors", "[checkpoint]") {
  const std::string dir = testing::TestTempDir("cli_bad");
  auto usage = RunCli(kRunQuickstart + " --resume", Plans());
  CHECK(usage.exit_code == 2);
  CHECK(Contains(usage.err, "--resume needs --checkpoint-dir=DIR"));
  auto zero = RunCli(
      kRunQuickstart + " --checkpoint-dir=" + dir + " --checkpoint-every=0",
      Plans());
  CHECK(zero.exit_code == 2);
  CHECK(Contains(zero.err,
                 "--checkpoint-every needs a whole number >= 1, "
                 "got '0'"));
  // The spellings from before flags took dashes still work, with a
  // warning naming the new one.
  auto old_spelling =
      RunCli(kRunQuickstart + " --no-progress --checkpoint_dir=" + dir +
                 "/old --keep_last=1",
             Plans());
  CHECK(old_spelling.exit_code == 0);
  CHECK(Contains(old_spelling.err,
                 "--checkpoint_dir is spelled --checkpoint-dir"));
  CHECK(Contains(old_spelling.err, "--keep_last is spelled --keep-last"));
  CHECK(std::filesystem::exists(dir + "/old"));
  // A checkpoint of the typed plan, resumed into the quickstart.
  REQUIRE(
      RunCli("run examples/plans/typed.pbtxt --no-progress --checkpoint-dir=" +
                 dir,
             Plans())
          .exit_code == 0);
  auto foreign =
      RunCli(kRunQuickstart + " --no-progress --resume --checkpoint-dir=" + dir,
             Plans());
  CHECK(foreign.exit_code == 1);
  CHECK(Contains(foreign.last_line, "is of another plan: task '"));
  // A corrupt one names its file.
  std::filesystem::remove_all(dir);
  REQUIRE(RunCli(kRunQuickstart +
                     " --no-progress --pieces=10 --checkpoint-dir=" + dir,
                 Plans())
              .exit_code == 0);
  const std::string file = CheckpointPath(dir, 10) + "/state.bin";
  {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(2);
    f.put('\x7f');
  }
  auto corrupt =
      RunCli(kRunQuickstart + " --no-progress --resume --checkpoint-dir=" + dir,
             Plans());
  CHECK(corrupt.exit_code == 1);
  CHECK(Contains(corrupt.last_line, file));
  CHECK(Contains(corrupt.last_line, "fails its checksum"));
  // With nothing to resume from, it starts at piece 0 and says so.
  std::filesystem::remove_all(dir);
  auto fresh =
      RunCli(kRunQuickstart + " --no-progress --resume --checkpoint-dir=" + dir,
             Plans());
  CHECK(fresh.exit_code == 0);
  CHECK(Field(fresh.last_line, "resumed_from") == "0");
  CHECK(Contains(fresh.err, "no checkpoint in " + dir + " yet"));
}

TEST_CASE("three ranks: a rank killed at random, the job resumed, same sinks",
          "[checkpoint]") {
  const uint64_t seed = testing::TestSeed("actorflow launch SIGKILL");
  std::mt19937_64 random(seed);
  const std::string dir = testing::TestTempDir("cli_ranks");
  const std::string args =
      absl::StrCat("launch --nproc=3 ", kThreeMachines, " --pieces=6000");
  auto whole = RunCli(args + " --no-progress", Plans());
  INFO(whole.out);
  REQUIRE(whole.exit_code == 0);
  int kills = 0;
  const std::string resumed = RunUntilDone(
      "actorflow",
      absl::StrCat(args, " --no-progress --peer-timeout=5 --checkpoint-dir=",
                   dir, " --checkpoint-every=500 --keep-last=2 --resume"),
      dir, &random,
      Crashes{.to = 0.5,
              .at_most = 3,
              .kill_child = true,
              .watch = dir + "/rank-0"},
      &kills);
  std::printf("actorflow launch: %d jobs lost a rank\n", kills);
  CHECK(kills > 0);
  INFO(resumed);
  CHECK(Field(resumed, "checksum") == Field(whole.last_line, "checksum"));
  CHECK(Contains(resumed, "\"pieces\":6000,"));
  CHECK(!Field(resumed, "resumed_from").empty());
  // Every rank keeps its own checkpoints, at the same pieces.
  for (int rank = 0; rank < 3; ++rank) {
    auto list = ListCheckpoints(absl::StrCat(dir, "/rank-", rank));
    REQUIRE(list.ok());
    REQUIRE(!list->empty());
    CHECK(list->back().first == 6000);
  }
}

TEST_CASE(
    "launch --max-restarts: ranks crashing, restarted from the newest "
    "common checkpoint, same sinks",
    "[checkpoint]") {
  const std::string dir = testing::TestTempDir("cli_restarts");
  const std::string args =
      absl::StrCat("launch --nproc=3 ", kThreeMachines, " --pieces=3000");
  auto whole = RunCli(args + " --no-progress", Plans());
  REQUIRE(whole.exit_code == 0);
  // Every start of every rank dies right after its third checkpoint is in
  // place: each start gets at least two checkpoints further.
  auto restarted =
      RunCli(absl::StrCat(args,
                          " --no-progress --peer-timeout=5 --max-restarts=8 "
                          "--restart-backoff-scale=0.01 --checkpoint-every=300 "
                          "--checkpoint-dir=",
                          dir),
             Plans(), "ACTORFLOW_CHECKPOINT_CRASH_AT=renamed:3 ");
  INFO(restarted.err);
  INFO(restarted.last_line);
  CHECK(restarted.exit_code == 0);
  const int restarts = std::stoi(Field(restarted.last_line, "restarts"));
  CHECK(restarts >= 2);
  CHECK(restarts <= 5);
  CHECK(Contains(restarted.err, "from the newest checkpoint every rank"));
  CHECK(Field(restarted.last_line, "checksum") ==
        Field(whole.last_line, "checksum"));
  CHECK(Contains(restarted.last_line, "\"pieces\":3000,"));
  CHECK(Contains(restarted.last_line, "\"in_order\":true"));
}

TEST_CASE("mnist_mlp: killed at random moments, resumed, the same weights",
          "[checkpoint]") {
  const uint64_t seed = testing::TestSeed("mnist_mlp SIGKILL");
  std::mt19937_64 random(seed);
  const std::string dir = testing::TestTempDir("cli_mnist");
  const std::string flags =
      "--epochs=2 --train-limit=12800 --test-limit=2000 --seed=5";
  const std::string mnist = "examples/mnist_mlp/mnist_mlp";
  auto whole = RunCli(flags, Plans(), "", mnist);
  INFO(whole.out);
  REQUIRE(whole.exit_code == 0);
  REQUIRE(!Field(whole.last_line, "weights_crc32").empty());
  // Writing checkpoints changes nothing.
  auto written = RunCli(
      flags + " --checkpoint-every=30 --checkpoint-dir=" + dir + "/plain",
      Plans(), "", mnist);
  CHECK(Field(written.last_line, "final_loss") ==
        Field(whole.last_line, "final_loss"));
  CHECK(Field(written.last_line, "weights_crc32") ==
        Field(whole.last_line, "weights_crc32"));
  int kills = 0;
  const std::string resumed = RunUntilDone(
      mnist,
      flags +
          " --checkpoint-every=20 --keep-last=3 --resume --checkpoint-dir=" +
          dir + "/killed",
      dir + "/killed", &random, Crashes{.to = 0.5}, &kills);
  std::printf("mnist_mlp: %d runs killed\n", kills);
  CHECK(kills > 0);
  INFO(resumed);
  for (const char* key : {"final_loss", "test_accuracy", "weights_crc32"}) {
    CHECK(Field(resumed, key) == Field(whole.last_line, key));
  }
  CHECK(!Field(resumed, "resumed_from_step").empty());
  auto fresh = RunCli(flags + " --resume --checkpoint-dir=" + dir + "/empty",
                      Plans(), "", mnist);
  CHECK(Contains(fresh.out, "no checkpoint in " + dir + "/empty yet"));
  CHECK(Field(fresh.last_line, "weights_crc32") ==
        Field(whole.last_line, "weights_crc32"));
}

}  // namespace
}  // namespace actorflow::internal
