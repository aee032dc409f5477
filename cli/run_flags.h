#ifndef ACTORFLOW_CLI_RUN_FLAGS_H_
#define ACTORFLOW_CLI_RUN_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "actorflow/session.h"
#include "cli/flags.h"
#include "net/job.h"

namespace actorflow::internal::cli {

// The flags of `actorflow run`, which launch takes too and passes on to its
// ranks.
struct RunFlags {
  int64_t pieces = -1;  // -1: the plan's total_piece_num
  int64_t max_register_bytes = kDefaultMaxRegisterBytes;
  std::string trace_path;
  bool stats = false;
  double stats_every_s = 0;  // --stats-every: 0: no live lines
  bool check_memory_sharing = false;
  int cpus = 0;  // 0: the process's usable CPUs
  StreamSharing sharing = StreamSharing::kAuto;
  double timeout_s = 0;
  double stall_s = 0;
  bool progress_on = false;   // --progress
  bool progress_off = false;  // --no-progress
  // Where this process stands in a multi-machine job (world_size 1: alone).
  net::JobConfig job;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool resume = false;
  int keep_last = 0;
  // SIGTERM/SIGUSR1 to a rank: how long the job may take to reach its cut,
  // checkpoint and exit before it gives up (exit 1).
  double preempt_grace_s = 25;

  bool checkpoints() const { return !checkpoint_dir.empty(); }
};

// --max-register-bytes=N into `bytes` (run and validate).
void DeclareRegisterLimit(int64_t* bytes, FlagSet* flags);
// Every flag of run into `run`.
void DeclareRunFlags(RunFlags* run, FlagSet* flags);
// What the flags say together, checked once they parsed: --resume,
// --keep-last and --checkpoint-every need --checkpoint-dir, the rank lies in
// the world. Copies the checkpoint flags into the job's config.
absl::Status CheckRunFlags(RunFlags* run);

}  // namespace actorflow::internal::cli

#endif  // ACTORFLOW_CLI_RUN_FLAGS_H_
