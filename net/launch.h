#ifndef ACTORFLOW_NET_LAUNCH_H_
#define ACTORFLOW_NET_LAUNCH_H_

#include <string>
#include <vector>

#include "absl/time/time.h"

namespace actorflow::internal::net {

struct LaunchOptions {
  int nproc = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: a free port, picked here
  // The ranks' peer timeout: once one rank has failed, the others get this
  // long (plus a margin) to follow before they are killed.
  absl::Duration peer_timeout = absl::Seconds(30);
  // What follows `actorflow run` for each rank: PLAN and run flags.
  std::vector<std::string> run_args;
};

// `actorflow launch`: starts nproc processes of this binary on this
// machine, `actorflow run` with RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT set, waits for all of them and prints one JSON line for the
// job: every rank's sinks together, or the error (a rank killed by a
// signal; else rank 0's; else the lowest failed rank's). No process
// outlives it: a rank still running long after another failed is killed,
// and every rank dies with the launcher (PR_SET_PDEATHSIG). Returns the
// exit code: 0, 1 (a rank failed), 2 (invalid plan or arguments).
int Launch(const LaunchOptions& options);

// A TCP port on `addr` that nobody listens on now (the kernel's pick for
// port 0); 0 when none could be had. Another process may take it before
// the caller binds it.
int FreePort(const std::string& addr);

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_LAUNCH_H_
