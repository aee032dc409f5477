#include "net/launch.h"

#include <arpa/inet.h>
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
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "base/json.h"

namespace actorflow::internal::net {
namespace {

std::atomic<int> g_signal{0};

void OnSignal(int signal) { g_signal.store(signal); }

struct Rank {
  pid_t pid = -1;
  int out_fd = -1;
  std::string out;
  std::thread reader;
  bool exited = false;
  int exit_code = -1;  // -1: killed by a signal
  int signal = 0;
};

std::string LastLine(std::string text) {
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t nl = text.rfind('\n');
  return nl == std::string::npos ? text : text.substr(nl + 1);
}

}  // namespace

int FreePort(const std::string& addr) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = 0;
  if (inet_pton(AF_INET, addr.c_str(), &sa.sin_addr) != 1) {
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  }
  int port = 0;
  socklen_t len = sizeof(sa);
  if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len) == 0) {
    port = ntohs(sa.sin_port);
  }
  close(fd);
  return port;
}

namespace {

// Starts rank r of `n` as `actorflow run` with its place in the job in
// the environment, its stdout read into rank->out by a thread of its own.
// False (with the reason on stderr) when it could not be started.
bool SpawnRank(const LaunchOptions& options, int port, int r, pid_t launcher,
               Rank* rank) {
  int fds[2];
  if (pipe(fds) != 0) {
    std::perror("actorflow launch: pipe");
    return false;
  }
  std::vector<std::string> args = {"actorflow", "run"};
  args.insert(args.end(), options.run_args.begin(), options.run_args.end());
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  const std::string env[] = {absl::StrCat("RANK=", r),
                             absl::StrCat("WORLD_SIZE=", options.nproc),
                             absl::StrCat("MASTER_ADDR=", options.master_addr),
                             absl::StrCat("MASTER_PORT=", port)};
  const pid_t pid = fork();
  if (pid == 0) {
    // Dies with the launcher, however the launcher ends.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(127);
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    close(fds[1]);
    for (const std::string& kv : env) putenv(const_cast<char*>(kv.c_str()));
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    execv("/proc/self/exe", argv.data());
    std::fprintf(stderr, "actorflow launch: exec: %s\n", std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  if (pid < 0) {
    std::perror("actorflow launch: fork");
    close(fds[0]);
    return false;
  }
  rank->pid = pid;
  rank->out_fd = fds[0];
  rank->reader = std::thread([rank] {
    char buf[4096];
    ssize_t got;
    while ((got = read(rank->out_fd, buf, sizeof(buf))) > 0 ||
           (got < 0 && errno == EINTR)) {
      if (got > 0) rank->out.append(buf, got);
    }
    close(rank->out_fd);
  });
  return true;
}

// Waits for every rank to exit, recording how. SIGINT and SIGTERM are
// passed on to the ranks; once one rank has failed (or a signal came), the
// rest get the peer timeout and a margin (10 s after a signal) to follow,
// then are killed. Joins the readers.
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
      for (Rank& rank : ranks) {
        if (!rank.exited) kill(rank.pid, g_signal.load());
      }
      kill_at = std::min(kill_at, absl::Now() + absl::Seconds(10));
    }
    if (absl::Now() >= kill_at) {
      for (Rank& rank : ranks) {
        if (rank.exited) continue;
        std::fprintf(stderr,
                     "actorflow launch: rank %d still running %s after "
                     "another failed; killing it\n",
                     static_cast<int>(&rank - ranks.data()),
                     absl::FormatDuration(grace).c_str());
        kill(rank.pid, SIGKILL);
      }
      kill_at = absl::InfiniteFuture();
    }
    usleep(10000);  // polls children; not synchronization with them
  }
  for (Rank& rank : ranks) rank.reader.join();
}

// The job's JSON line from the ranks' last lines and exit statuses; returns
// the exit code: every rank's sinks together (0); an invalid plan or
// arguments, said once (2); else the error: a rank killed by a signal,
// else the lowest failed rank's (1).
int Report(const std::vector<Rank>& ranks) {
  const int n = static_cast<int>(ranks.size());
  std::vector<std::string> lines;
  std::vector<Json> parsed;  // discarded where a rank printed no JSON
  for (const Rank& rank : ranks) {
    lines.push_back(LastLine(rank.out));
    parsed.push_back(ParseJson(lines.back()));
  }
  // The value of `key` in rank r's line; null when it has none.
  auto field = [&](int r, const char* key) -> Json {
    const Json& line = parsed[r];
    if (!line.is_object() || !line.contains(key)) return nullptr;
    return line[key];
  };
  bool all_ok = true;
  for (const Rank& rank : ranks) all_ok &= rank.exit_code == 0;
  if (all_ok) {
    std::map<std::string, Json> sinks;  // by task name, as one process lists
    int64_t pieces = 0;
    double wall_ms = 0;
    for (int r = 0; r < n; ++r) {
      const Json rank_sinks = field(r, "sinks");
      if (rank_sinks.is_object()) {
        for (const auto& [name, sink] : rank_sinks.items()) sinks[name] = sink;
      }
      const Json p = field(r, "pieces"), w = field(r, "wall_ms");
      if (p.is_number()) pieces = std::max(pieces, p.get<int64_t>());
      if (w.is_number()) wall_ms = std::max(wall_ms, w.get<double>());
    }
    Json line = {{"status", "ok"}, {"world_size", n}};
    // --resume: every rank started at the same piece.
    const Json resumed = field(0, "resumed_from");
    if (!resumed.is_null()) line["resumed_from"] = resumed;
    line["pieces"] = pieces;
    line["wall_ms"] = JsonRounded(wall_ms, 3);
    line["sinks"] = Json::object();
    for (auto& [name, sink] : sinks) line["sinks"][name] = std::move(sink);
    PrintJsonLine(line);
    return 0;
  }
  // An invalid plan or arguments: every rank refused it; say it once.
  for (int r = 0; r < n; ++r) {
    if (ranks[r].exit_code == 2) {
      std::printf("%s\n", lines[r].c_str());
      return 2;
    }
  }
  Json error;
  for (int r = 0; r < n && error.is_null(); ++r) {
    if (ranks[r].exit_code < 0) {
      error =
          absl::StrCat("rank ", r, " was killed by signal ", ranks[r].signal,
                       " (", strsignal(ranks[r].signal), ")");
    }
  }
  for (int r = 0; r < n && error.is_null(); ++r) {
    if (ranks[r].exit_code != 0) {
      error = field(r, "error");
      if (error.is_null()) {
        error =
            absl::StrCat("rank ", r, " exited with code ", ranks[r].exit_code);
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
  PrintJsonLine({{"status", "error"},
                 {"world_size", n},
                 {"error", error},
                 {"exit_codes", codes}});
  return 1;
}

}  // namespace

int Launch(const LaunchOptions& options) {
  int port = options.master_port;
  if (port == 0) port = FreePort(options.master_addr);
  if (port == 0) {
    std::fprintf(stderr, "actorflow launch: found no free port on %s\n",
                 options.master_addr.c_str());
    PrintJsonLine({{"status", "error"}, {"error", "no free port"}});
    return 1;
  }
  struct sigaction action {};
  action.sa_handler = OnSignal;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  const pid_t launcher = getpid();
  std::vector<Rank> ranks(options.nproc);
  for (int r = 0; r < options.nproc; ++r) {
    if (!SpawnRank(options, port, r, launcher, &ranks[r])) {
      // None of the started ranks outlives the launcher's failure.
      for (int k = 0; k < r; ++k) kill(ranks[k].pid, SIGKILL);
      for (int k = 0; k < r; ++k) {
        waitpid(ranks[k].pid, nullptr, 0);
        ranks[k].reader.join();
      }
      return 1;
    }
  }
  Supervise(options, ranks);
  return Report(ranks);
}

}  // namespace actorflow::internal::net
