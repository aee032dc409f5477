// The peer suite: actorflow beside oneTBB (parallel_pipeline, flow graph)
// and CAF on the same workloads, the same work and the same thread count,
// in one run; prints one table and rewrites its block of
// docs/performance.md between its markers. See kHelp.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "bench/busy_work.h"
#include "bench/engine_workload.h"
#include "bench/peer_field.h"
#include "bench/peer_workloads.h"
#include "bench/tbb_arena.h"
#include "engine/engine.h"

namespace actorflow::internal::bench {
namespace {

constexpr char kHelp[] =
    R"(actorflow beside oneTBB and CAF, same work, same threads:
tools/bazel run //bench:peer_suite [-- flags].

Workloads (each peer in alternation, medians of --samples):
  pipeline  8 serial stages, busy work 0 / 1 / 10 us per stage, at most
            1 / 2 / 8 items in flight (actorflow: register_num; TBB:
            parallel_pipeline tokens, flow-graph limiter; CAF: credit)
  pingpong  one item between two threads: round trip p50 / p99 (beside
            two threads on one atomic: the machine's floor)
  fan       source -> 8 branches (1 us each) -> join, 2 items in flight
  overload  two producers as fast as they can (1 KB items) into one
            consumer (10 us each): items/s and peak RSS of a process
            running only that (bounded registers vs mailboxes/queues)
  wavefront 64x64 cells (1 us each), cell (i,j) after (i-1,j), (i,j-1):
            actorflow's dependency engine vs TBB's flow graph
  engine    the engine's random workload (empty ops) vs TBB's flow graph
  field     the pipeline (1 us, cap 2) and fan rows with 2, 3, 4 and 8
            threads: on the idle machine, beside a process burning one
            core, and under a cgroup CPU quota of one CPU (as root, where
            cgroup v1's cpu controller is writable); each condition in a
            child process; oneTBB with its arena as shipped and forced to
            the row's thread count

Figures: wall ns and process CPU ns per unit of work (CPU counts every
thread, spinning included), the peer's wall time over actorflow's, and
parallel efficiency = (work per unit / threads) / wall per unit.)";

struct Options {
  bool quick = false;
  int64_t threads = 2;
  int64_t samples = 5;
  std::string readme;
  bool write_readme = true;
  std::string child;  // internal: run one overload peer, or "field", and report
  std::string cgroup;  // internal: the child's cgroup (field, quota)
  std::string only;    // comma-separated workloads; empty: all
  bool Runs(const std::string& workload) const {
    return only.empty() ||
           ("," + only + ",").find("," + workload + ",") != std::string::npos;
  }
};

// One line of the table.
struct Row {
  std::string workload;
  std::string peer;
  Cost cost;              // medians per unit
  double vs_ours = 0;     // peer wall / actorflow wall (1 on our rows)
  double efficiency = 0;  // 0: not applicable
  std::string extra;      // p99, RSS, ...
};

struct Suite {
  Options options;
  BusyWork work = BusyWork::Calibrate();
  std::vector<Row> rows;
  std::vector<std::string> verdicts;
};

Cost MedianCost(const std::vector<Cost>& costs) {
  std::vector<double> wall, cpu;
  for (const Cost& c : costs) {
    wall.push_back(c.wall_ns);
    cpu.push_back(c.cpu_ns);
  }
  return Cost{Median(wall), Median(cpu)};
}

using Runner = std::function<Cost()>;

// Runs every peer once to warm up, then `samples` rounds of all peers in
// turn; returns each peer's median cost, in the order given.
std::vector<Cost> Alternate(int samples, const std::vector<Runner>& peers) {
  for (const Runner& run : peers) run();
  std::vector<std::vector<Cost>> costs(peers.size());
  for (int s = 0; s < samples; ++s) {
    for (size_t p = 0; p < peers.size(); ++p) costs[p].push_back(peers[p]());
  }
  std::vector<Cost> medians;
  for (const auto& c : costs) medians.push_back(MedianCost(c));
  return medians;
}

void AddRows(Suite* suite, const std::string& workload,
             const std::vector<std::string>& peers,
             const std::vector<Cost>& costs, double work_ns) {
  for (size_t p = 0; p < peers.size(); ++p) {
    Row row{workload, peers[p], costs[p], costs[p].wall_ns / costs[0].wall_ns};
    if (work_ns > 0) {
      row.efficiency = work_ns / suite->options.threads / costs[p].wall_ns;
    }
    suite->rows.push_back(row);
  }
}

void Verdict(Suite* suite, bool holds, const std::string& text) {
  suite->verdicts.push_back(std::string(holds ? "holds" : "MISSED") + ": " +
                            text);
}

std::string Fmt(const char* format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value);
  return buf;
}

void Pipelines(Suite* suite) {
  const Options& o = suite->options;
  for (double work_us : {0.0, 1.0, 10.0}) {
    for (int cap : {1, 2, 8}) {
      PipelineSpec spec;
      spec.threads = o.threads;
      spec.cap = cap;
      spec.work_iters = suite->work.ItersFor(work_us * 1000);
      int64_t scale = work_us == 0 ? 200'000 : work_us == 1 ? 20'000 : 2'000;
      spec.items = o.quick ? scale / 4 : scale;
      std::string name = "pipeline work " + Fmt("%g", work_us) + " us, cap " +
                         std::to_string(cap);
      std::vector<Runner> runners = {
          [&] { return actorflow_peer::Pipeline(spec); },
          [&] { return tbb_peer::Pipeline(spec); },
          [&] { return tbb_peer::GraphPipeline(spec); },
          [&] { return caf_peer::Pipeline(spec); }};
      std::vector<std::string> peers = {"actorflow", "oneTBB parallel_pipeline",
                                        "oneTBB flow graph", "CAF"};
      // Without work there is nothing to overlap: docs/performance.md's
      // placement guidance puts such a line on one thread. Both placements are
      // shown.
      PipelineSpec one_thread = spec;
      one_thread.placement_threads = 1;
      if (work_us == 0) {
        runners.push_back([&] { return actorflow_peer::Pipeline(one_thread); });
        peers.push_back("actorflow, line on 1 thread");
      }
      std::vector<Cost> costs = Alternate(o.samples, runners);
      AddRows(suite, name, peers, costs, work_us * 1000);
      if (work_us == 0) {
        double best_tbb = std::min(costs[1].wall_ns, costs[2].wall_ns);
        Verdict(suite, costs[0].wall_ns <= best_tbb,
                name + ", stages split over the threads: actorflow " +
                    Fmt("%.1f", costs[0].wall_ns) +
                    " ns/act <= oneTBB's best " + Fmt("%.1f", best_tbb));
        Verdict(suite, costs[4].wall_ns <= best_tbb,
                name + ", line on 1 thread: actorflow " +
                    Fmt("%.1f", costs[4].wall_ns) +
                    " ns/act <= oneTBB's best " + Fmt("%.1f", best_tbb));
      } else if (cap == 2) {
        double eff = work_us * 1000 / o.threads / costs[0].wall_ns;
        Verdict(suite, eff >= 0.9,
                name + ": parallel efficiency " + Fmt("%.1f", eff * 100) +
                    " % >= 90 %");
      }
    }
  }
}

void PingPongs(Suite* suite) {
  const Options& o = suite->options;
  PingPongSpec spec{o.quick ? 5'000 : 20'000};
  struct Peer {
    const char* name;
    std::function<std::vector<double>()> run;
    std::vector<double> p50, p99;
  };
  std::vector<Peer> peers = {
      {"actorflow", [&] { return actorflow_peer::PingPong(spec); }},
      {"CAF", [&] { return caf_peer::PingPong(spec, o.threads); }},
      {"atomic flag (floor)", [&] { return AtomicPingPong(spec); }},
  };
  for (Peer& p : peers) p.run();  // warm-up
  for (int s = 0; s < o.samples; ++s) {
    for (Peer& p : peers) {
      std::vector<double> rtt = p.run();
      p.p50.push_back(Percentile(rtt, 0.5));
      p.p99.push_back(Percentile(rtt, 0.99));
    }
  }
  double ours = Median(peers[0].p50);
  for (Peer& p : peers) {
    double p50 = Median(p.p50);
    Row row{"pingpong round trip", p.name, Cost{p50, 0}, p50 / ours};
    row.extra = "p99 " + Fmt("%.0f", Median(p.p99)) + " ns";
    suite->rows.push_back(row);
  }
  Verdict(suite, ours <= Median(peers[1].p50),
          "pingpong: actorflow p50 " + Fmt("%.0f", ours) + " ns <= CAF's " +
              Fmt("%.0f", Median(peers[1].p50)));
}

void Fans(Suite* suite) {
  const Options& o = suite->options;
  FanSpec spec;
  spec.threads = o.threads;
  spec.work_iters = suite->work.ItersFor(1000);
  spec.items = o.quick ? 5'000 : 20'000;
  std::vector<Cost> costs =
      Alternate(o.samples, {[&] { return actorflow_peer::Fan(spec); },
                            [&] { return tbb_peer::Fan(spec); },
                            [&] { return caf_peer::Fan(spec); }});
  AddRows(suite, "fan-out/fan-in 8 x 1 us, cap 2",
          {"actorflow", "oneTBB flow graph", "CAF"}, costs, 1000);
}

// The overload peers run in child processes so that each one's peak RSS is
// its own.
struct ChildResult {
  Cost cost;
  double max_rss_mb = 0;
};

OverloadSpec OverloadFor(const Options& o, const BusyWork& work) {
  OverloadSpec spec;
  spec.threads = o.threads;
  spec.items = o.quick ? 5'000 : 20'000;
  spec.work_iters = work.ItersFor(10'000);
  return spec;
}

int RunChild(const Options& o, const BusyWork& work) {
  if (o.child == "field") {
    // Into the quota's group before any thread starts: threads inherit it.
    if (!o.cgroup.empty()) {
      std::ofstream procs(o.cgroup + "/cgroup.procs");
      procs << getpid() << std::flush;
      if (!procs) {
        std::fprintf(stderr, "peer_suite: cannot join %s\n", o.cgroup.c_str());
        return 1;
      }
    }
    // Under the quota, samples of ten quota periods (see MakeQuotaGroup).
    RunFieldRows(
        work, o.quick, static_cast<int>(o.samples),
        o.cgroup.empty() ? absl::ZeroDuration() : absl::Milliseconds(100));
    return 0;
  }
  OverloadSpec spec = OverloadFor(o, work);
  Cost cost;
  if (o.child == "actorflow") {
    cost = actorflow_peer::Overload(spec);
  } else if (o.child == "tbb") {
    cost = tbb_peer::Overload(spec);
  } else if (o.child == "caf") {
    cost = caf_peer::Overload(spec);
  } else {
    std::fprintf(stderr, "peer_suite: unknown --child=%s\n", o.child.c_str());
    return 2;
  }
  std::printf("%.3f %.3f\n", cost.wall_ns, cost.cpu_ns);
  return 0;
}

// Runs peer_suite again as a child with `args`; its stdout, or "" (and a
// message) when it failed. `max_rss_mb`, when given, gets the child's peak
// resident memory.
std::string RunSelf(const std::vector<std::string>& args,
                    double* max_rss_mb = nullptr) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    std::vector<char*> argv = {const_cast<char*>("peer_suite")};
    for (const std::string& arg : args)
      argv.push_back(const_cast<char*>(arg.c_str()));
    argv.push_back(nullptr);
    execv("/proc/self/exe", argv.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, n);
  close(fds[0]);
  int status = 0;
  rusage usage{};
  wait4(pid, &status, 0, &usage);
  if (max_rss_mb != nullptr) *max_rss_mb = usage.ru_maxrss / 1024.0;
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::fprintf(stderr, "peer_suite: child %s failed\n", args[0].c_str());
    return "";
  }
  return out;
}

ChildResult SpawnChild(const Options& o, const char* peer,
                       double iters_per_ns) {
  ChildResult result;
  const std::string out = RunSelf(
      {std::string("--child=") + peer, o.quick ? "--quick" : "--no-readme",
       "--threads=" + std::to_string(o.threads),
       "--iters-per-ns=" + Fmt("%.9f", iters_per_ns)},
      &result.max_rss_mb);
  if (std::sscanf(out.c_str(), "%lf %lf", &result.cost.wall_ns,
                  &result.cost.cpu_ns) != 2) {
    std::fprintf(stderr, "peer_suite: overload child %s failed: %s\n", peer,
                 out.c_str());
    std::exit(1);
  }
  return result;
}

void Overloads(Suite* suite) {
  const Options& o = suite->options;
  const char* peers[] = {"actorflow", "tbb", "caf"};
  const char* names[] = {"actorflow", "oneTBB flow graph", "CAF"};
  std::vector<std::vector<Cost>> costs(3);
  std::vector<std::vector<double>> rss(3);
  for (int s = 0; s < o.samples; ++s) {
    for (int p = 0; p < 3; ++p) {
      ChildResult r = SpawnChild(o, peers[p], suite->work.iters_per_ns());
      costs[p].push_back(r.cost);
      rss[p].push_back(r.max_rss_mb);
    }
  }
  double ours = MedianCost(costs[0]).wall_ns;
  for (int p = 0; p < 3; ++p) {
    Cost c = MedianCost(costs[p]);
    Row row{"overload 2 -> 1 (10 us), 1 KB items", names[p], c,
            c.wall_ns / ours};
    row.extra = "peak RSS " + Fmt("%.1f", Median(rss[p])) + " MB, " +
                Fmt("%.0f", 1e9 / c.wall_ns) + " items/s";
    suite->rows.push_back(row);
  }
}

// A process that keeps one core busy until killed.
pid_t StartBurner() {
  const pid_t pid = fork();
  if (pid == 0) {
    volatile uint64_t spin = 0;
    while (true) spin = spin + 1;
  }
  return pid;
}

// A cgroup v1 group limited to one CPU (10 ms per 10 ms period), or "" with
// the reason in *why. The short period keeps the field rows' samples (each
// 100 ms at least) many periods long; the quota is what a container limited
// to one CPU has (Kubernetes sets 100 ms per 100 ms).
std::string MakeQuotaGroup(std::string* why) {
  const std::string dir =
      "/sys/fs/cgroup/cpu/actorflow_peer_suite_" + std::to_string(getpid());
  if (mkdir(dir.c_str(), 0755) != 0) {
    *why = "cannot make " + dir + ": " + std::strerror(errno) +
           " (needs root and cgroup v1's cpu controller)";
    return "";
  }
  std::ofstream(dir + "/cpu.cfs_period_us") << "10000";
  std::ofstream quota(dir + "/cpu.cfs_quota_us");
  quota << "10000" << std::flush;
  if (!quota) {
    rmdir(dir.c_str());
    *why = "cannot set the quota of " + dir;
    return "";
  }
  return dir;
}

void Field(Suite* suite) {
  const Options& o = suite->options;
  const std::vector<std::string> base = {
      "--child=field", o.quick ? "--quick" : "--no-readme",
      "--samples=" + std::to_string(o.samples),
      "--iters-per-ns=" + Fmt("%.9f", suite->work.iters_per_ns())};
  struct Condition {
    std::string name;
    std::string label;
  };
  for (const Condition& c :
       {Condition{"idle", "idle machine"},
        Condition{"burner", "beside a process burning one core"},
        Condition{"quota", "cgroup quota of 1 CPU"}}) {
    std::vector<std::string> args = base;
    pid_t burner = 0;
    std::string group;
    if (c.name == "burner") burner = StartBurner();
    if (c.name == "quota") {
      std::string why;
      group = MakeQuotaGroup(&why);
      if (group.empty()) {
        suite->verdicts.push_back("not measured: rows under a CPU quota: " +
                                  why);
        continue;
      }
      args.push_back("--cgroup=" + group);
    }
    const std::string out = RunSelf(args);
    if (burner > 0) {
      kill(burner, SIGKILL);
      waitpid(burner, nullptr, 0);
    }
    if (!group.empty()) rmdir(group.c_str());
    const std::vector<FieldRow> rows = ParseFieldRows(out);
    if (rows.empty()) {
      suite->verdicts.push_back("not measured: the field rows, " + c.label +
                                ": the child process failed");
      continue;
    }
    // Per workload: actorflow's 2-thread wall time, the baseline.
    std::map<std::string, double> ours_at_2;
    for (const FieldRow& r : rows) {
      if (r.peer == "actorflow" && r.threads == kFieldThreads.front()) {
        ours_at_2[r.workload] = r.cost.wall_ns;
      }
    }
    for (size_t i = 0; i < rows.size();) {
      // One group: the rows of a workload and thread count, ours first.
      size_t end = i;
      while (end < rows.size() && rows[end].workload == rows[i].workload &&
             rows[end].threads == rows[i].threads) {
        ++end;
      }
      const FieldRow& ours = rows[i];
      double best_wall = 0, best_cpu = 0;
      for (size_t k = i + 1; k < end; ++k) {
        if (best_wall == 0 || rows[k].cost.wall_ns < best_wall) {
          best_wall = rows[k].cost.wall_ns;
        }
        if (best_cpu == 0 || rows[k].cost.cpu_ns < best_cpu) {
          best_cpu = rows[k].cost.cpu_ns;
        }
      }
      const std::string name = c.label + ", " + std::to_string(ours.threads) +
                               " threads: " + ours.workload;
      for (size_t k = i; k < end; ++k) {
        Row row{name, rows[k].peer, rows[k].cost,
                rows[k].cost.wall_ns / ours.cost.wall_ns};
        suite->rows.push_back(row);
      }
      const int t = ours.threads;
      const double own = ours_at_2[ours.workload];
      if (c.name == "idle" && t != kFieldThreads.front() && own > 0) {
        const double limit = t <= 4 ? 1.3 : 1.6;
        Verdict(suite, ours.cost.wall_ns <= limit * own,
                name + ": actorflow " + Fmt("%.0f", ours.cost.wall_ns) +
                    " ns <= " + Fmt("%.1f", limit) + "x its 2-thread " +
                    Fmt("%.0f", own));
      }
      const double slack = c.name == "idle" ? 1.0 : 1.1;
      Verdict(suite, ours.cost.wall_ns <= slack * best_wall,
              name + ": actorflow wall " + Fmt("%.0f", ours.cost.wall_ns) +
                  " ns <= " + Fmt("%.1f", slack) + "x the best peer's " +
                  Fmt("%.0f", best_wall));
      Verdict(suite, ours.cost.cpu_ns <= 1.2 * best_cpu,
              name + ": actorflow CPU " + Fmt("%.0f", ours.cost.cpu_ns) +
                  " ns <= 1.2x the best peer's " + Fmt("%.0f", best_cpu));
      i = end;
    }
  }
}

void EngineGraphs(Suite* suite) {
  const Options& o = suite->options;
  engine::EngineOptions engine_options;
  engine_options.cpu_worker_nthreads = o.threads;
  engine_options.cpu_priority_nthreads = 1;  // idle here: parked
  std::unique_ptr<engine::Engine> engine = engine::Engine::Create(
      engine::EngineType::kThreadedPerDevice, engine_options);
  TbbArena arena(o.threads);
  struct Graph {
    std::string name;
    std::vector<DepOp> ops;
    int vars;
    double work_ns;
  };
  std::vector<Graph> graphs = {
      {"wavefront 64x64, 1 us per cell", WavefrontDepOps(64), 64 * 64, 1000},
      {"engine random ops (empty), 100 vars",
       RandomDepOps(o.quick ? 20'000 : 100'000, 100, 20261122), 100, 0},
  };
  for (const Graph& g : graphs) {
    if (!o.Runs(g.name.rfind("wavefront", 0) == 0 ? "wavefront" : "engine")) {
      continue;
    }
    int64_t iters = suite->work.ItersFor(g.work_ns);
    // A sample repeats a short graph until it lasts some 30 ms (the
    // wavefront runs for 3): one run of a few milliseconds is mostly the
    // scheduler's noise. Both peers repeat it the same number of times.
    const double once =
        RunDepOpsOnEngine(engine.get(), g.ops, g.vars, iters) * 1e3;
    const int reps =
        std::clamp(static_cast<int>(30 / std::max(once, 0.1)), 1, 20);
    double units = static_cast<double>(g.ops.size()) * reps;
    // The engine is timed from its first push to WaitForAll (its variables
    // are data, made before and deleted after); TBB from the op list to the
    // graph's destruction (building the graph is its way of pushing ops).
    std::vector<Cost> costs = Alternate(
        o.samples, {[&] {
                      double seconds = 0;
                      int64_t cpu_ns = 0;
                      for (int r = 0; r < reps; ++r) {
                        int64_t run_cpu_ns = 0;
                        seconds += RunDepOpsOnEngine(
                            engine.get(), g.ops, g.vars, iters, &run_cpu_ns);
                        cpu_ns += run_cpu_ns;
                      }
                      return Cost{seconds * 1e9 / units, cpu_ns / units};
                    },
                    [&] {
                      return Measure(units, [&] {
                        for (int r = 0; r < reps; ++r) {
                          RunDepOpsOnTbb(g.ops, g.vars, iters, nullptr,
                                         arena.arena());
                        }
                      });
                    }});
    AddRows(suite, g.name, {"actorflow engine", "oneTBB flow graph"}, costs,
            g.work_ns);
  }
}

std::string CpuModel() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      return line.substr(line.find(':') + 2);
    }
  }
  return "unknown CPU";
}

std::string Table(const Suite& suite) {
  std::ostringstream out;
  out << "| workload | peer | wall ns/unit | CPU ns/unit | peer / actorflow "
         "| efficiency | notes |\n"
      << "| --- | --- | ---: | ---: | ---: | ---: | --- |\n";
  for (const Row& r : suite.rows) {
    out << "| " << r.workload << " | " << r.peer << " | "
        << Fmt("%.1f", r.cost.wall_ns) << " | "
        << (r.cost.cpu_ns > 0 ? Fmt("%.1f", r.cost.cpu_ns) : "") << " | "
        << Fmt("%.2f", r.vs_ours) << " | "
        << (r.efficiency > 0 ? Fmt("%.0f %%", r.efficiency * 100) : "") << " | "
        << r.extra << " |\n";
  }
  return out.str();
}

std::string Section(const Suite& suite, const std::string& table) {
  char date[32];
  std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  std::ostringstream out;
  out << "Generated by `tools/bazel run //bench:peer_suite"
      << (suite.options.quick ? " -- --quick" : "") << "` on " << date << ": "
      << CpuModel() << ", " << suite.options.threads
      << " threads for every framework, " << suite.options.samples
      << " samples per figure (medians).\n\n"
      << table << "\nTargets:\n\n";
  for (const std::string& v : suite.verdicts) out << "- " << v << "\n";
  return out.str();
}

constexpr char kBegin[] = "<!-- peer_suite:begin -->";
constexpr char kEnd[] = "<!-- peer_suite:end -->";

bool RewriteReadme(const std::string& path, const std::string& section) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "peer_suite: cannot read %s\n", path.c_str());
    return false;
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  size_t begin = text.find(kBegin);
  size_t end = text.find(kEnd);
  if (begin == std::string::npos || end == std::string::npos || end < begin) {
    std::fprintf(stderr, "peer_suite: %s has no %s ... %s markers\n",
                 path.c_str(), kBegin, kEnd);
    return false;
  }
  text = text.substr(0, begin + std::strlen(kBegin)) + "\n" + section +
         text.substr(end);
  std::ofstream out(path);
  out << text;
  return static_cast<bool>(out);
}

int Main(int argc, char** argv) {
  Options o;
  double iters_per_ns = 0;
  bool no_readme = false;
  FlagSet flags("peer_suite [flags]", kHelp);
  flags.Bool("quick", &o.quick, "smaller sizes, 3 samples: about a minute");
  flags.Int("threads", &o.threads, "threads for every framework", 1, 256);
  flags.Int("samples", &o.samples, "samples per figure (--quick: 3)", 1);
  flags.String("readme", &o.readme, "PATH",
               "the Markdown file whose marked block to rewrite (default: "
               "docs/performance.md of the workspace under `bazel run`)");
  flags.Bool("no-readme", &no_readme, "print only");
  flags.String("only", &o.only, "W[,W]",
               "run only these workloads (pipeline, pingpong, fan, overload, "
               "wavefront, engine, field); never rewrites the file");
  flags.String("child", &o.child, "W", "").Hidden();
  flags.String("cgroup", &o.cgroup, "DIR", "").Hidden();
  flags.Double("iters-per-ns", &iters_per_ns, "", 0).Hidden();
  flags.ParseOrExit(argc, argv);
  if (no_readme || !o.only.empty()) o.write_readme = false;
  const bool samples_set = flags.given("samples");
  if (o.quick && !samples_set) o.samples = 3;
  if (!o.child.empty()) {
    return RunChild(o, iters_per_ns > 0 ? BusyWork::FromRate(iters_per_ns)
                                        : BusyWork::Calibrate());
  }
  if (o.readme.empty() && o.write_readme) {
    const char* workspace = std::getenv("BUILD_WORKSPACE_DIRECTORY");
    if (workspace != nullptr)
      o.readme = std::string(workspace) + "/docs/performance.md";
  }
  Suite suite{o};
  std::printf(
      "peer_suite: %s, %d threads, %d samples%s; 1 us of work = %.0f "
      "loop iterations\n",
      CpuModel().c_str(), static_cast<int>(o.threads),
      static_cast<int>(o.samples), o.quick ? " (--quick)" : "",
      suite.work.ItersFor(1000) * 1.0);
  std::fflush(stdout);
  if (o.Runs("pipeline")) Pipelines(&suite);
  if (o.Runs("pingpong")) PingPongs(&suite);
  if (o.Runs("fan")) Fans(&suite);
  if (o.Runs("overload")) Overloads(&suite);
  if (o.Runs("wavefront") || o.Runs("engine")) EngineGraphs(&suite);
  if (o.Runs("field")) Field(&suite);
  std::string table = Table(suite);
  std::printf("\n%s\n", table.c_str());
  for (const std::string& v : suite.verdicts) std::printf("%s\n", v.c_str());
  if (o.write_readme && !o.readme.empty()) {
    if (!RewriteReadme(o.readme, Section(suite, table))) return 1;
    std::printf("\npeer_suite: rewrote the Performance section of %s\n",
                o.readme.c_str());
  }
  return 0;
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  return actorflow::internal::bench::Main(argc, argv);
}
