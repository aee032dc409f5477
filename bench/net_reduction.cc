#include "bench/net_reduction.h"

#include <dirent.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "actorflow/job_compiler.h"
#include "actorflow/usable_cpus.h"
#include "bench/bench_util.h"
#include "bench/busy_work.h"
#include "bench/spawn.h"
#include "net/job.h"

namespace actorflow::internal::bench {
namespace {

// Every rank listens on these in its own namespace, where nothing else does.
constexpr int kChoicePort = 29500;
constexpr int kGatherPort = 29501;

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "net_bench --reduce=1: %s\n", what.c_str());
  std::exit(1);
}

void Check(const absl::Status& status, const std::string& what) {
  if (!status.ok()) Die(absl::StrCat(what, ": ", status.ToString()));
}

std::string RankAddress(int subnet, int rank) {
  return absl::StrCat("10.215.", subnet, ".", rank + 1);
}

// Bytes a rank's link carried: its namespace holds "lo" and its end of
// the veth pair, whose counters these are.
struct LinkBytes {
  int64_t in = 0;   // received
  int64_t out = 0;  // sent
};

std::string LinkName() {
  std::string name;
  if (DIR* dir = opendir("/sys/class/net")) {
    while (dirent* entry = readdir(dir)) {
      const std::string n = entry->d_name;
      if (n != "." && n != ".." && n != "lo") name = n;
    }
    closedir(dir);
  }
  if (name.empty()) Die("no veth end in this rank's namespace");
  return name;
}

LinkBytes ReadLink(const std::string& name) {
  auto counter = [&](const char* which) {
    std::ifstream in("/sys/class/net/" + name + "/statistics/" + which);
    int64_t value = 0;
    if (!(in >> value)) Die(absl::StrCat("cannot read ", name, "'s ", which));
    return value;
  };
  return LinkBytes{counter("rx_bytes"), counter("tx_bytes")};
}

// A link capped at 1 Gbit/s (tc tbf rate 1gbit) moves this many bytes a
// second, frames' headers included, as its counters count them.
constexpr double kCapBytesPerSecond = 125e6;

// `grad`, a float32 partial sum of `mib` MiB on machines 0..world-1, read
// whole by a checksum on machine 0, or with `everywhere` on each machine
// (as each rank's optimizer reads its gradient's sum).
Job ReductionJob(int world, int64_t mib, Job::PartialSumReduction how,
                 bool everywhere) {
  Job job;
  job.set_partial_sum_reduction(how);
  OpConf* grad = job.add_op();
  grad->set_name("grad");
  grad->set_op_type("source");
  grad->add_shape(mib * 1024);
  grad->add_shape(256);  // 1 KiB rows
  for (int m = 0; m < world; ++m) grad->mutable_placement()->add_machine_id(m);
  (*grad->mutable_output_signature())["out"].set_partial_sum(true);
  OpConf* read = job.add_op();
  read->set_name("read");
  read->set_op_type("checksum");
  read->add_input("grad");
  if (everywhere) {
    read->add_input_signature()->set_broadcast(true);
    *read->mutable_placement() = grad->placement();
  }
  return job;
}

Plan CompileReduction(int world, int64_t mib, Job::PartialSumReduction how,
                      bool everywhere) {
  absl::StatusOr<CompiledJob> compiled =
      CompileJob(ReductionJob(world, mib, how, everywhere));
  Check(compiled.status(), "compiling the reduction");
  return std::move(compiled->plan);
}

// How `plan` adds the parts, in a word for the table: "scatter" (a
// reduce-scatter), "each-adds" (every reader's machine adds them all) or
// "gather" (one machine adds them all).
const char* Way(const Plan& plan) {
  int adds = 0;
  for (const TaskProto& task : plan.task()) {
    if (task.kernel().op_type() == "concat") return "scatter";
    adds += task.kernel().op_type() == "add";
  }
  return adds > 1 ? "each-adds" : "gather";
}

// ------------------------------------------------------------ the switch

// A bridge in a namespace of its own and one namespace per rank, each
// plugged in by a veth pair capped both ways; all deleted with Remove or
// at exit (deleting a namespace deletes its ends of the pairs).
class Switch {
 public:
  static Switch& Current() {
    static Switch instance;
    return instance;
  }

  void Make(int ranks, int subnet) {
    Remove();
    tag_ = absl::StrCat("nbr", getpid());
    ranks_ = ranks;
    static const bool removed_at_exit =
        std::atexit([] { Current().Remove(); }) == 0;
    (void)removed_at_exit;
    const std::string hub = Hub();
    const std::string tbf = " root tbf rate 1gbit burst 256kb latency 50ms";
    std::string script = absl::StrCat("set -e; ip netns add ", hub, "; ip -n ",
                                      hub, " link add br0 type bridge; ip -n ",
                                      hub, " link set br0 up");
    for (int r = 0; r < ranks; ++r) {
      const std::string ns = Rank(r);
      const std::string a = absl::StrCat("v", getpid(), "r", r, "a");
      const std::string b = absl::StrCat("v", getpid(), "r", r, "b");
      absl::StrAppend(
          &script, "; ip netns add ", ns, "; ip link add ", a,
          " type veth peer name ", b, "; ip link set ", a, " netns ", hub,
          "; ip link set ", b, " netns ", ns, "; ip -n ", hub, " link set ", a,
          " master br0; ip -n ", hub, " link set ", a, " up; ip -n ", ns,
          " addr add ", RankAddress(subnet, r), "/24 dev ", b, "; ip -n ", ns,
          " link set ", b, " up; ip -n ", ns, " link set lo up; ip netns exec ",
          hub, " tc qdisc add dev ", a, tbf, "; ip netns exec ", ns,
          " tc qdisc add dev ", b, tbf);
    }
    const std::string command = absl::StrCat("(", script, ") 2>&1");
    if (std::system(command.c_str()) != 0) {
      Die(absl::StrCat("needs root, iproute2 and tc: making ", ranks,
                       " namespaces on a bridge failed"));
    }
  }

  void Remove() {
    if (tag_.empty()) return;
    // Each one that exists: a Make that failed halfway made only some.
    std::string command = absl::StrCat("ok=0; for ns in ", Hub());
    for (int r = 0; r < ranks_; ++r) absl::StrAppend(&command, " ", Rank(r));
    absl::StrAppend(&command,
                    "; do if [ -e /run/netns/$ns ]; then ip netns del $ns "
                    "2>/dev/null || ok=1; fi; done; exit $ok");
    if (std::system(command.c_str()) != 0) {
      std::fprintf(stderr, "net_bench: could not delete namespaces %s*\n",
                   tag_.c_str());
    }
    tag_.clear();
  }

  std::string Hub() const { return tag_ + "h"; }
  std::string Rank(int r) const { return absl::StrCat(tag_, "r", r); }

 private:
  std::string tag_;
  int ranks_ = 0;
};

// Rank `rank` of `world` in its namespace; rank 0's stdout goes to `out`
// (a pipe's write end) when it is not -1.
pid_t StartRank(const ReductionConfig& config, int rank, int world, int subnet,
                int out) {
  const std::string self = SelfPath();
  if (self.empty()) Die("cannot read /proc/self/exe");
  const pid_t pid =
      Spawn({"ip", "netns", "exec", Switch::Current().Rank(rank), self,
             kReductionRankFlag, absl::StrCat(rank, ",", world, ",", subnet),
             absl::StrCat("--samples=", config.samples),
             absl::StrCat("--reduce-mib=", config.mib),
             absl::StrCat("--reduce-pieces=", config.pieces),
             absl::StrCat("--reduce-everywhere=", config.everywhere)},
            out, /*die_with_parent=*/true);
  if (pid < 0) Die("fork failed");
  return pid;
}

// One row: `world` ranks on a fresh switch; rank 0's figures.
struct Row {
  std::string way;  // the compiler's choice
  double choice_ms = 0;
  double gather_ms = 0;
  double ratio = 0;  // gather / choice, per round
  // While the compiler's choice ran: the fraction of the cap each way that
  // rank 0's link carried, and the mean over the other ranks' links.
  double rank0_in = 0, rank0_out = 0, others_in = 0, others_out = 0;
  // The ranks' CPU time over the CPUs' time while the choice ran.
  double cpus_busy = 0;
};

Row MeasureRanks(const ReductionConfig& config, int world) {
  const int subnet = getpid() % 250;
  Switch::Current().Make(world, subnet);
  // Each rank's stdout; a rank prints a line or two, well within a pipe's
  // buffer, so the pipes are read one after another.
  std::vector<int> reads;
  std::vector<pid_t> ranks;
  for (int r = 0; r < world; ++r) {
    int pipe_fds[2];
    if (pipe(pipe_fds) != 0) Die("pipe failed");
    ranks.push_back(StartRank(config, r, world, subnet, pipe_fds[1]));
    close(pipe_fds[1]);
    reads.push_back(pipe_fds[0]);
  }
  std::vector<std::string> outputs(world);
  for (int r = 0; r < world; ++r) {
    char buffer[4096];
    for (ssize_t got; (got = read(reads[r], buffer, sizeof(buffer))) > 0;) {
      outputs[r].append(buffer, got);
    }
    close(reads[r]);
  }
  for (int r = 0; r < world; ++r) {
    int status = 0;
    if (waitpid(ranks[r], &status, 0) != ranks[r] || !WIFEXITED(status) ||
        WEXITSTATUS(status) != 0) {
      Die(absl::StrCat("rank ", r, " of ", world, " failed"));
    }
  }
  Switch::Current().Remove();
  Row row;
  double cpu_s = 0, wall_s = 0;
  for (int r = 0; r < world; ++r) {
    const std::vector<std::string> fields =
        absl::StrSplit(outputs[r], absl::ByAnyChar(" \n"), absl::SkipEmpty());
    // Every rank: "link IN OUT CPU_S WALL_S"; rank 0 then "result WAY
    // CHOICE GATHER RATIO".
    double in = 0, out = 0, cpu = 0, wall = 0;
    const bool ok = fields.size() == (r == 0 ? 10u : 5u) &&
                    fields[0] == "link" && absl::SimpleAtod(fields[1], &in) &&
                    absl::SimpleAtod(fields[2], &out) &&
                    absl::SimpleAtod(fields[3], &cpu) &&
                    absl::SimpleAtod(fields[4], &wall) &&
                    (r != 0 || (fields[5] == "result" &&
                                absl::SimpleAtod(fields[7], &row.choice_ms) &&
                                absl::SimpleAtod(fields[8], &row.gather_ms) &&
                                absl::SimpleAtod(fields[9], &row.ratio)));
    if (!ok) {
      Die(absl::StrCat("rank ", r, " of ", world, " printed '", outputs[r],
                       "'"));
    }
    cpu_s += cpu;
    wall_s += wall / world;  // the ranks run the same rounds together
    if (r == 0) {
      row.way = fields[6];
      row.rank0_in = in;
      row.rank0_out = out;
    } else {
      row.others_in += in / (world - 1);
      row.others_out += out / (world - 1);
    }
  }
  // The ranks share this process's CPUs (affinity, cgroup quota).
  row.cpus_busy = wall_s > 0 ? cpu_s / (wall_s * DetectUsableCpus().count) : 0;
  return row;
}

}  // namespace

int ReductionRank(const ReductionConfig& config, const std::string& place) {
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  std::vector<std::string> parts = absl::StrSplit(place, ',');
  int rank = 0, world = 0, subnet = 0;
  if (parts.size() != 3 || !absl::SimpleAtoi(parts[0], &rank) ||
      !absl::SimpleAtoi(parts[1], &world) ||
      !absl::SimpleAtoi(parts[2], &subnet)) {
    Die(absl::StrCat("bad ", kReductionRankFlag, " ", place));
  }
  const Plan choice = CompileReduction(world, config.mib, Job::PARTIAL_SUM_AUTO,
                                       config.everywhere);
  const Plan gather = CompileReduction(
      world, config.mib, Job::PARTIAL_SUM_GATHER, config.everywhere);
  auto join = [&](const Plan& plan, int port) {
    net::JobConfig job;
    job.rank = rank;
    job.world_size = world;
    job.master_addr = RankAddress(subnet, 0);
    job.host = RankAddress(subnet, rank);
    job.master_port = port;
    job.join_timeout = absl::Seconds(60);
    job.peer_timeout = absl::Seconds(60);
    auto created = net::Job::Create(plan, config.pieces, job, {});
    Check(created.status(), absl::StrCat("rank ", rank, ": joining"));
    return std::move(*created);
  };
  std::unique_ptr<net::Job> chosen = join(choice, kChoicePort);
  std::unique_ptr<net::Job> gathered = join(gather, kGatherPort);
  // Milliseconds per reduction; every rank runs the same rounds. The
  // choice's runs also count what this rank's link carried meanwhile (the
  // barrier's few bytes included).
  const std::string link = LinkName();
  LinkBytes carried;
  int64_t choice_ns = 0, choice_cpu_ns = 0;
  auto run = [&](net::Job* job) {
    const bool counted = job == chosen.get();
    const LinkBytes before = counted ? ReadLink(link) : LinkBytes{};
    const int64_t cpu_start = counted ? ProcessCpuNs() : 0;
    const int64_t start = NowNs();
    Check(job->Run(config.pieces).status(), "run");
    Check(job->Barrier(), "barrier after the run");
    const int64_t ns = NowNs() - start;
    if (counted) {
      const LinkBytes after = ReadLink(link);
      carried.in += after.in - before.in;
      carried.out += after.out - before.out;
      choice_ns += ns;
      choice_cpu_ns += ProcessCpuNs() - cpu_start;
    }
    return ns * 1e-6 / config.pieces;
  };
  const std::vector<std::vector<double>> ms = AlternatedSamples(
      config.samples,
      {[&] { return run(chosen.get()); }, [&] { return run(gathered.get()); }});
  Check(chosen->Finish(), "finishing");
  Check(gathered->Finish(), "finishing");
  const double capacity = choice_ns * 1e-9 * kCapBytesPerSecond;
  std::printf("link %.4f %.4f %.4f %.4f\n", carried.in / capacity,
              carried.out / capacity, choice_cpu_ns * 1e-9, choice_ns * 1e-9);
  if (rank == 0) {
    std::printf("result %s %.3f %.3f %.4f\n", Way(choice), Median(ms[0]),
                Median(ms[1]), MedianRatio(ms[1], ms[0]));
  }
  return 0;
}

int CompareReductions(const ReductionConfig& config) {
  std::printf(
      "net_bench --reduce=1: a %lld MiB float32 partial sum made on every "
      "rank and read whole on %s;\neach rank in a network namespace on "
      "one bridge, every link capped at 1 Gbit/s each way (tc tbf);\n%lld "
      "samples of %lld reductions (medians; ratios per round)\n\n",
      static_cast<long long>(config.mib),
      config.everywhere ? "every rank" : "rank 0",
      static_cast<long long>(config.samples),
      static_cast<long long>(config.pieces));
  std::printf("%-6s %-18s %14s %14s %10s %12s %10s %10s %10s %10s %10s\n",
              "ranks", "compiler's choice", "ms/reduction", "gather ms",
              "gather/af", "af/2 ranks", "r0 in", "r0 out", "others in",
              "others out", "CPUs busy");
  double two = 0;
  for (int world = 2; world <= config.max_ranks; world *= 2) {
    const Row row = MeasureRanks(config, world);
    if (world == 2) two = row.choice_ms;
    std::printf(
        "%-6d %-18s %14.1f %14.1f %9.2fx %11.2fx %9.0f%% %9.0f%% "
        "%9.0f%% %9.0f%% %9.0f%%\n",
        world, row.way.c_str(), row.choice_ms, row.gather_ms, row.ratio,
        row.choice_ms / two, 100 * row.rank0_in, 100 * row.rank0_out,
        100 * row.others_in, 100 * row.others_out, 100 * row.cpus_busy);
    std::fflush(stdout);
  }
  std::printf(
      "\ngather/af: how many times longer every part gathered on rank 0 "
      "takes (PARTIAL_SUM_GATHER%s);\naf/2 ranks: the compiler's choice "
      "against itself over 2 ranks (target: at most 1.5x);\nr0 in, r0 out: "
      "how much of the 1 Gbit/s cap rank 0's link carried each way while "
      "the\ncompiler's choice ran (its counters: frames' headers "
      "included); others: the mean of\nthe other ranks' links; CPUs busy: "
      "the ranks' CPU time over the machine's CPU time meanwhile\n",
      config.everywhere ? ", the sum then sent on to every other rank" : "");
  return 0;
}

}  // namespace actorflow::internal::bench
