// Starting another process from a benchmark: this binary's own path, and
// fork + exec of an argument list.
#ifndef ACTORFLOW_BENCH_SPAWN_H_
#define ACTORFLOW_BENCH_SPAWN_H_

#include <sys/prctl.h>
#include <sys/types.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <string>
#include <vector>

namespace actorflow::internal::bench {

// This binary's path (read before an exec makes /proc/self/exe another
// program's); empty if it cannot be read.
inline std::string SelfPath() {
  char self[4096];
  const ssize_t length = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (length <= 0) return "";
  return std::string(self, length);
}

// Starts `args` (args[0] looked up on PATH) with its stdout on `stdout_fd`
// unless that is -1, killed when this process dies if `die_with_parent`.
// The child's pid; -1 if fork failed (an exec that fails exits 127).
inline pid_t Spawn(std::vector<std::string> args, int stdout_fd = -1,
                   bool die_with_parent = false) {
  std::fflush(stdout);  // nothing buffered is printed twice
  const pid_t pid = fork();
  if (pid != 0) return pid;
  if (die_with_parent) prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (stdout_fd != -1) dup2(stdout_fd, STDOUT_FILENO);
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  _exit(127);
}

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_SPAWN_H_
