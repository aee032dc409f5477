#include "net/launch.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "base/json.h"
#include "base/mutex.h"

namespace actorflow::internal::net {
namespace {

std::atomic<int> g_signal{0};

void OnSignal(int signal) { g_signal.store(signal); }

struct Rank {
  int number = 0;  // in the job
  pid_t pid = -1;
  std::string out;
  std::thread reader;
  std::thread err_reader;
  bool exited = false;
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
};

std::string LastLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

// Binds a TCP socket to `addr`:`port` (0: the kernel's pick) and returns
// the port it got, or 0; the socket is closed again.
int BindAndClose(const std::string& addr, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  int got = 0;
  socklen_t len = sizeof(sa);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    got = ntohs(sa.sin_port);
  }
  close(fd);
  return got;
}

}  // namespace

int EphemeralPortsFrom() {
  int low = 32768, high = 60999;
  if (FILE* f = std::fopen("/proc/sys/net/ipv4/ip_local_port_range", "r")) {
    if (std::fscanf(f, "%d %d", &low, &high) != 2) low = 32768;
    std::fclose(f);
  }
  return low;
}

int FreePort(const std::string& addr) {
  // Below the ephemeral range: the kernel never gives those ports to a
  // connection's own end or to a bind of port 0, so between this call and
  // the caller's bind only another explicit bind can take the port.
  const int below = EphemeralPortsFrom();
  const int first = std::max(1024, below - 8192);
  if (below > first) {
    std::mt19937 pick(std::random_device{}());
    std::uniform_int_distribution<int> port(first, below - 1);
    for (int tries = 0; tries < 64; ++tries) {
      if (const int got = BindAndClose(addr, port(pick)); got != 0) return got;
    }
  }
  return BindAndClose(addr, 0);
}

namespace {

Mutex g_stderr_mu;  // whole lines from different ranks stay whole

// A file under the log directory, appended to (a restart adds to it); -1
// when there is no log directory or it cannot be opened (said once).
int OpenLog(const std::string& dir, int rank, const char* ext) {
  if (dir.empty()) return -1;
  const std::string path = absl::StrCat(dir, "/rank-", rank, ".", ext);
  const int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "actorflow launch: cannot write %s: %s\n",
                 path.c_str(), std::strerror(errno));
  }
  return fd;
}

void WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

// Reads `fd` until it closes, handing each chunk read to `take` and
// copying it to `log` (when >= 0); then closes both.
void Drain(int fd, int log,
           const std::function<void(absl::string_view)>& take) {
  char buf[4096];
  ssize_t got;
  while ((got = read(fd, buf, sizeof(buf))) > 0 ||
         (got < 0 && errno == EINTR)) {
    if (got <= 0) continue;
    if (log >= 0) WriteAll(log, buf, static_cast<size_t>(got));
    take(absl::string_view(buf, static_cast<size_t>(got)));
  }
  close(fd);
  if (log >= 0) close(log);
}

// Reads the rank's stderr until it closes: each line to the terminal with
// "[rank R] " before it, and as it came to the log (when there is one).
void RelayStderr(int fd, int rank, int log) {
  const std::string prefix = absl::StrCat("[rank ", rank, "] ");
  std::string pending;
  auto emit = [&](absl::string_view line) {
    std::string text = absl::StrCat(prefix, line, "\n");
    MutexLock lock(&g_stderr_mu);
    WriteAll(STDERR_FILENO, text.data(), text.size());
  };
  Drain(fd, log, [&](absl::string_view chunk) {
    pending.append(chunk.data(), chunk.size());
    size_t start = 0, nl;
    while ((nl = pending.find('\n', start)) != std::string::npos) {
      emit(absl::string_view(pending).substr(start, nl - start));
      start = nl + 1;
    }
    pending.erase(0, start);
  });
  if (!pending.empty()) emit(pending);
}

// Starts rank `rank` (local rank `local`) as `actorflow run` with its
// place in the job in the environment, its stdout read into rank->out and
// its stderr relayed by threads of their own. False (with the reason on
// stderr) when it could not be started.
bool SpawnRank(const LaunchOptions& options, int port, int local,
               pid_t launcher, Rank* rank) {
  int out_fds[2], err_fds[2];
  if (pipe2(out_fds, O_CLOEXEC) != 0) {
    std::perror("actorflow launch: pipe");
    return false;
  }
  if (pipe2(err_fds, O_CLOEXEC) != 0) {
    std::perror("actorflow launch: pipe");
    close(out_fds[0]);
    close(out_fds[1]);
    return false;
  }
  rank->number = options.node_rank * options.nproc + local;
  std::vector<std::string> args = {"actorflow", "run"};
  args.insert(args.end(), options.run_args.begin(), options.run_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  std::vector<std::string> env = {
      absl::StrCat("RANK=", rank->number),
      absl::StrCat("WORLD_SIZE=", options.nnodes * options.nproc),
      absl::StrCat("LOCAL_RANK=", local),
      absl::StrCat("LOCAL_WORLD_SIZE=", options.nproc),
      absl::StrCat("MASTER_ADDR=", options.master_addr),
      absl::StrCat("MASTER_PORT=", port)};
  if (!options.token.empty()) {
    env.push_back(absl::StrCat("ACTORFLOW_JOB_TOKEN=", options.token));
  }
  const pid_t pid = fork();
  if (pid == 0) {
    // Dies with the launcher, however the launcher ends.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);
    dup2(out_fds[1], STDOUT_FILENO);
    dup2(err_fds[1], STDERR_FILENO);
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    execv("/proc/self/exe", argv.data());
    std::fprintf(stderr, "actorflow launch: exec: %s\n", std::strerror(errno));
    _exit(127);
  }
  close(out_fds[1]);
  close(err_fds[1]);
  if (pid < 0) {
    std::perror("actorflow launch: fork");
    close(out_fds[0]);
    close(err_fds[0]);
    return false;
  }
  rank->pid = pid;
  const int out_log = OpenLog(options.log_dir, rank->number, "out");
  const int err_log = OpenLog(options.log_dir, rank->number, "err");
  rank->reader =
      std::thread(Drain, out_fds[0], out_log, [rank](absl::string_view chunk) {
        rank->out.append(chunk.data(), chunk.size());
      });
  rank->err_reader =
      std::thread(RelayStderr, err_fds[0], rank->number, err_log);
  return true;
}

// Waits for every rank to exit, recording how. SIGINT, SIGTERM and SIGUSR1
// are passed on to the ranks; once one rank has failed (or a signal came),
// the rest get the peer timeout and a margin (after SIGINT 10 s, after a
// preemption its grace and 10 s) to follow, then are killed. Joins the
// readers.
void Supervise(const LaunchOptions& options, std::vector<Rank>& ranks) {
  int running = static_cast<int>(ranks.size());
  const absl::Duration grace = options.peer_timeout + absl::Seconds(10);
  absl::Time kill_at = absl::InfiniteFuture();
  bool forwarded = false;
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      for (Rank& rank : ranks) {
        if (rank.pid != pid) continue;
        rank.exited = true;
        --running;
        if (WIFEXITED(status)) {
          rank.exit_code = WEXITSTATUS(status);
        } else if (WIFSIGNALED(status)) {
          rank.signal = WTERMSIG(status);
        }
        if (rank.exit_code != 0 && kill_at == absl::InfiniteFuture()) {
          kill_at = absl::Now() + grace;
        }
      }
      continue;
    }
    if (g_signal.load() != 0 && !forwarded) {
      forwarded = true;
      const int signal = g_signal.load();
      for (Rank& rank : ranks) {
        if (!rank.exited) kill(rank.pid, signal);
      }
      const absl::Duration follow =
          (signal == SIGINT ? absl::ZeroDuration() : options.preempt_grace) +
          absl::Seconds(10);
      kill_at = std::min(kill_at, absl::Now() + follow);
    }
    if (absl::Now() >= kill_at) {
      for (Rank& rank : ranks) {
        if (rank.exited) continue;
        std::fprintf(stderr,
                     "actorflow launch: rank %d still running %s after "
                     "another failed; killing it\n",
                     rank.number, absl::FormatDuration(grace).c_str());
        kill(rank.pid, SIGKILL);
      }
      kill_at = absl::InfiniteFuture();
    }
    usleep(10000);  // polls children; not synchronization with them
  }
  for (Rank& rank : ranks) {
    rank.reader.join();
    rank.err_reader.join();
  }
}

// What one start of the ranks came to: the exit code (0, 1, 2, 3) and the
// job's JSON line (or, for 2, the line to print as it is).
struct Outcome {
  int code = 0;
  Json line;
  std::string said;  // code 2: the ranks' own line
};

// The job's outcome from the ranks' last lines and exit statuses: every
// rank's sinks together (0; 3 when the ranks were preempted, with where
// and why); an invalid plan or arguments, said once (2); else the error: a
// rank killed by a signal, else the lowest failed rank's (1).
Outcome Summarize(const std::vector<Rank>& ranks, int world_size) {
  const int n = static_cast<int>(ranks.size());
  std::vector<std::string> lines;
  std::vector<Json> parsed;  // discarded where a rank printed no JSON
  for (const Rank& rank : ranks) {
    lines.push_back(LastLine(rank.out));
    parsed.push_back(ParseJson(lines.back()));
  }
  // The value of `key` in the line of ranks[i]; null when it has none.
  auto field = [&](int i, const char* key) -> Json {
    const Json& line = parsed[i];
    if (!line.is_object() || !line.contains(key)) return nullptr;
    return line[key];
  };
  bool all_ok = true;
  bool preempted = false;
  for (const Rank& rank : ranks) {
    all_ok &= rank.exit_code == 0 || rank.exit_code == kExitPreempted;
    preempted |= rank.exit_code == kExitPreempted;
  }
  if (all_ok) {
    std::map<std::string, Json> sinks;  // by task name, as one process lists
    int64_t pieces = 0;
    double wall_ms = 0;
    for (int i = 0; i < n; ++i) {
      const Json rank_sinks = field(i, "sinks");
      if (rank_sinks.is_object()) {
        for (const auto& [name, sink] : rank_sinks.items()) sinks[name] = sink;
      }
      const Json p = field(i, "pieces"), w = field(i, "wall_ms");
      if (p.is_number()) pieces = std::max(pieces, p.get<int64_t>());
      if (w.is_number()) wall_ms = std::max(wall_ms, w.get<double>());
    }
    Json line = {{"status", preempted ? "preempted" : "ok"},
                 {"world_size", world_size}};
    // --resume: every rank started at the same piece; preempted: every
    // rank stopped at the same one, for the same reason.
    for (const char* key :
         {"resumed_from", "preempted_at", "reason", "checkpoint"}) {
      for (int i = 0; i < n; ++i) {
        const Json value = field(i, key);
        if (value.is_null()) continue;
        line[key] = value;
        break;
      }
    }
    line["pieces"] = pieces;
    line["wall_ms"] = JsonRounded(wall_ms, 3);
    line["sinks"] = Json::object();
    for (auto& [name, sink] : sinks) line["sinks"][name] = std::move(sink);
    // Rank 0 gathered every rank's, on every host: the whole job's.
    for (int i = 0; i < n; ++i) {
      const Json all = field(i, "job_sinks");
      if (all.is_object()) line["sinks"] = all;
    }
    return Outcome{preempted ? kExitPreempted : 0, std::move(line), ""};
  }
  // An invalid plan or arguments: every rank refused it; say it once.
  for (int i = 0; i < n; ++i) {
    if (ranks[i].exit_code == 2) return Outcome{2, nullptr, lines[i]};
  }
  Json error;
  for (int i = 0; i < n && error.is_null(); ++i) {
    if (ranks[i].exit_code < 0) {
      error =
          absl::StrCat("rank ", ranks[i].number, " was killed by signal ",
                       ranks[i].signal, " (", strsignal(ranks[i].signal), ")");
    }
  }
  for (int i = 0; i < n && error.is_null(); ++i) {
    if (ranks[i].exit_code != 0) {
      error = field(i, "error");
      if (error.is_null()) {
        error = absl::StrCat("rank ", ranks[i].number, " exited with code ",
                             ranks[i].exit_code);
      }
    }
  }
  Json codes = Json::array();
  for (const Rank& rank : ranks) {
    if (rank.exit_code >= 0) {
      codes.push_back(rank.exit_code);
    } else {
      codes.push_back(absl::StrCat("signal ", rank.signal));
    }
  }
  return Outcome{1,
                 {{"status", "error"},
                  {"world_size", world_size},
                  {"error", error},
                  {"exit_codes", codes}},
                 ""};
}

// Starts this node's ranks once and waits for them.
Outcome RunRanks(const LaunchOptions& options, int port) {
  const pid_t launcher = getpid();
  std::vector<Rank> ranks(options.nproc);
  for (int r = 0; r < options.nproc; ++r) {
    if (!SpawnRank(options, port, r, launcher, &ranks[r])) {
      // None of the started ranks outlives the launcher's failure.
      for (int k = 0; k < r; ++k) kill(ranks[k].pid, SIGKILL);
      for (int k = 0; k < r; ++k) {
        waitpid(ranks[k].pid, nullptr, 0);
        ranks[k].reader.join();
        ranks[k].err_reader.join();
      }
      return Outcome{1,
                     {{"status", "error"},
                      {"error", "could not start the ranks (see stderr)"}},
                     ""};
    }
  }
  Supervise(options, ranks);
  return Summarize(ranks, options.nnodes * options.nproc);
}

// Sleeps `wait`, or less when a signal comes.
void Backoff(absl::Duration wait) {
  const absl::Time until = absl::Now() + wait;
  while (absl::Now() < until && g_signal.load() == 0) {
    usleep(10000);  // polls for a signal; not synchronization
  }
}

}  // namespace

int Launch(const LaunchOptions& options) {
  struct sigaction action {};
  action.sa_handler = OnSignal;
  for (int signal : {SIGINT, SIGTERM, SIGUSR1}) {
    sigaction(signal, &action, nullptr);
  }
  LaunchOptions run = options;
  std::vector<std::string> errors;
  Outcome outcome;
  for (int restarts = 0;; ++restarts) {
    int port = options.master_port;
    if (port == 0) port = FreePort(options.master_addr);
    if (port == 0) {
      std::fprintf(stderr, "actorflow launch: found no free port on %s\n",
                   options.master_addr.c_str());
      PrintJsonLine({{"status", "error"}, {"error", "no free port"}});
      return 1;
    }
    outcome = RunRanks(run, port);
    if (outcome.code == 2) {
      std::printf("%s\n", outcome.said.c_str());
      return 2;
    }
    outcome.line["restarts"] = restarts;
    if (outcome.code == 0 || outcome.code == kExitPreempted) break;
    errors.push_back(outcome.line["error"].is_string()
                         ? outcome.line["error"].get<std::string>()
                         : outcome.line["error"].dump());
    if (restarts >= options.max_restarts || g_signal.load() != 0) break;
    const absl::Duration wait =
        std::min(absl::Seconds(30), absl::Seconds(1 << std::min(restarts, 5))) *
        options.backoff_scale;
    std::fprintf(stderr,
                 "actorflow launch: the job failed (%s); restart %d of %d in "
                 "%s%s\n",
                 errors.back().c_str(), restarts + 1, options.max_restarts,
                 absl::FormatDuration(wait).c_str(),
                 options.checkpoints ? ", from the newest checkpoint every "
                                       "rank completed"
                                     : ", from the beginning");
    Backoff(wait);
    if (g_signal.load() != 0) break;
    if (options.checkpoints &&
        std::find(run.run_args.begin(), run.run_args.end(), "--resume") ==
            run.run_args.end()) {
      run.run_args.push_back("--resume");
    }
  }
  if (outcome.code != 0 && errors.size() > 1) {
    const bool same =
        std::all_of(errors.begin(), errors.end(),
                    [&](const std::string& e) { return e == errors[0]; });
    outcome.line["error"] =
        absl::StrCat("the job failed ", errors.size(), " times (",
                     errors.size() - 1, " restarts), ",
                     same ? "each time: " : "the last time: ", errors.back());
  }
  PrintJsonLine(outcome.line);
  return outcome.code;
}

}  // namespace actorflow::internal::net
