#ifndef ACTORFLOW_NET_LAUNCH_H_
#define ACTORFLOW_NET_LAUNCH_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace actorflow::internal::net {

// What `actorflow run` exits with once its job was preempted (every rank
// stopped at the cut); launch passes it on as its own.
inline constexpr int kExitPreempted = 3;

struct LaunchOptions {
  // Ranks started here (--nproc-per-node), on node `node_rank` of `nnodes`:
  // ranks node_rank * nproc .. + nproc - 1 of nnodes * nproc.
  int nproc = 1;
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port, picked here (one node only)
  // The ranks' peer timeout: once one rank has failed, the others get this
  // long (plus a margin) to follow before they are killed.
  absl::Duration peer_timeout = absl::Seconds(30);
  // The job's secret, given to every rank as ACTORFLOW_JOB_TOKEN.
  std::string token;
  // Where each rank's stdout and stderr are kept (rank-R.out, rank-R.err);
  // empty: nowhere.
  std::string log_dir;
  // A failed job is started again, every rank, up to this many times (with
  // --resume when the ranks checkpoint), after 1, 2, 4, ... (at most 30)
  // seconds times `backoff_scale`.
  int max_restarts = 0;
  double backoff_scale = 1.0;
  // Whether run_args checkpoint (--checkpoint-dir): a restart resumes.
  bool checkpoints = false;
  // The ranks' --preempt-grace: after SIGTERM or SIGUSR1 (passed on to
  // them), how long they get, plus a margin, before they are killed.
  absl::Duration preempt_grace = absl::Seconds(25);
  // What follows `actorflow run` for each rank: PLAN and run flags.
  std::vector<std::string> run_args;
};

// `actorflow launch`: starts nproc processes of this binary here,
// `actorflow run` with RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE,
// MASTER_ADDR, MASTER_PORT and ACTORFLOW_JOB_TOKEN set, waits for all of
// them and prints one JSON line: every rank's sinks together, or the error
// (a rank killed by a signal; else rank 0's; else the lowest failed
// rank's), with "restarts". Each rank's stderr reaches the terminal line
// by line with "[rank R] " before it. No process outlives it: a rank still
// running long after another failed is killed, and every rank dies with
// the launcher (PR_SET_PDEATHSIG). SIGINT, SIGTERM and SIGUSR1 are passed
// on to every rank; the last two preempt the job (every rank stops at one
// cut and exits 3), and launch then prints "preempted" and restarts
// nothing. Returns the exit code: 0, 1 (a rank failed), 2 (invalid plan
// or arguments), 3 (preempted).
int Launch(const LaunchOptions& options);

// A TCP port on `addr` that nobody holds now; 0 when none could be had.
// Picked at random from the 8192 ports below the kernel's ephemeral range
// (EphemeralPortsFrom), which no outgoing connection takes as its own end,
// else the kernel's pick for port 0. Another process's explicit bind may
// still take it before the caller binds it.
int FreePort(const std::string& addr);
// The first port of the kernel's ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range; 32768 where it cannot be read).
int EphemeralPortsFrom();

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_LAUNCH_H_
