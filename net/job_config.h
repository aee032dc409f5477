#ifndef ACTORFLOW_NET_JOB_CONFIG_H_
#define ACTORFLOW_NET_JOB_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "net/job_credentials.h"

namespace actorflow::internal::net {

// Where this process stands in a job, as torchrun, mpirun, srun or
// `actorflow launch` say it.
struct JobConfig {
  int32_t rank = 0;
  int32_t world_size = 1;
  // This rank's place among the ranks of its host (informational: the
  // plan's machine_id is the rank).
  int32_t local_rank = 0;
  int32_t local_world_size = 1;
  std::string master_addr = "127.0.0.1";
  // Why that default cannot be right (the launcher says the ranks are on
  // several hosts, and nothing named the master); empty once a master
  // address was given. A job refuses to start while it is set.
  std::string master_missing;
  int32_t master_port = 29500;
  // The host other ranks reach this one at, and where it listens; empty:
  // 127.0.0.1 when MASTER_ADDR is a loopback address, else the address of
  // this machine's interface that the route to MASTER_ADDR leaves from.
  std::string host;
  absl::Duration join_timeout = absl::Seconds(60);
  absl::Duration peer_timeout = absl::Seconds(30);
  // No act on any rank for this long fails the job with what every rank
  // waits for (ControlOptions::hang_timeout); zero: never.
  absl::Duration hang_timeout = absl::Seconds(300);
  // Checkpoints: each rank's go under <checkpoint_dir>/rank-<rank>.
  std::string checkpoint_dir;
  // Start from the newest checkpoint that every rank has complete (none:
  // from the beginning).
  bool resume = false;
  // The job's secret (ACTORFLOW_JOB_TOKEN): every call between ranks
  // carries it and every service refuses a call without it
  // (UNAUTHENTICATED). Empty: calls are not checked.
  std::string token;
  // The job's name (ACTORFLOW_JOB_ID, else SLURM_JOB_ID, else
  // TORCHELASTIC_RUN_ID): rank 0 refuses a Join that names another.
  std::string job_id;
  // TLS between ranks (--tls-cert, --tls-key, --tls-ca); none: plaintext.
  TlsFiles tls;
  // The tasks whose registers are compressed (zstd) where they cross to
  // another rank (--net-compress), by task name; "all": every such task.
  // A name that sends nothing to another rank fails the job's start.
  std::vector<std::string> net_compress;
  // Ranks on one host (same boot id and namespaces: SharedMemoryHostId)
  // move registers through shared memory (--net-shm,
  // ACTORFLOW_NET_SHM=0|1). Two ranks share memory only where both allow
  // it.
  bool net_shm = true;
};

// The job as the environment states it. Rank and size come from the first
// of these pairs that is set (a pair half set is an error naming it):
//   RANK, WORLD_SIZE                        torchrun, `actorflow launch`
//   OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_SIZE   Open MPI's mpirun
//   PMI_RANK, PMI_SIZE                      MPICH's mpiexec (Hydra)
//   SLURM_PROCID, SLURM_NTASKS              srun
// the local rank and size from the matching LOCAL_RANK/LOCAL_WORLD_SIZE,
// OMPI_COMM_WORLD_LOCAL_RANK/_SIZE, MPI_LOCALRANKID/MPI_LOCALNRANKS or
// SLURM_LOCALID/SLURM_TASKS_PER_NODE. The master is MASTER_ADDR, else
// (under Slurm) the first host of SLURM_JOB_NODELIST (or SLURM_NODELIST),
// else 127.0.0.1; its port MASTER_PORT, else under Slurm 20000 +
// SLURM_JOB_ID % 10000 (two jobs sharing a node differ), else 29500.
// ACTORFLOW_JOB_TOKEN, ACTORFLOW_NET_SHM and the job id as JobConfig says.
// Errors name the variable. Absent everything: one process.
absl::StatusOr<JobConfig> JobConfigFromEnv();

// A Slurm host list expanded as Slurm does: "node[1-3,7],gpu[01-02]" ->
// node1 node2 node3 node7 gpu01 gpu02 (zero padding kept; several bracket
// groups in one name multiply). Errors name the list.
absl::StatusOr<std::vector<std::string>> ExpandHostList(
    const std::string& list);

// Whether `host` (a name or an address) resolves here; the error names it.
absl::Status Resolves(const std::string& host);

// A loopback address or name ("127.x", "localhost", "::1"), as written.
bool IsLoopback(const std::string& host);
// Whether every address `host` resolves to here is a loopback one.
bool ResolvesOnlyToLoopback(const std::string& host);

// The local address of the interface the route to `host` leaves from (no
// packet is sent): what this machine is reached at by `host`'s side.
absl::StatusOr<std::string> RouteAddressTo(const std::string& host);

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_JOB_CONFIG_H_
