#ifndef ACTORFLOW_CHECKPOINT_H_
#define ACTORFLOW_CHECKPOINT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/kernel_state.h"
#include "actorflow/proto/checkpoint.pb.h"
#include "actorflow/version.h"

// Checkpoints on disk (docs/checkpoints.md). A checkpoint is one directory,
// `<root>/ckpt-<piece>` (the piece in 12 digits), holding a MANIFEST (the
// cut's piece, the plan's signature, where every array lies and its CRC-32)
// and state.bin, every task's arrays and the program's end to end. It is
// written under a temporary name, every file and the directory fsynced,
// then renamed into place and the root fsynced: a crash at any instant
// leaves the root with the checkpoints it had, or with the new one
// complete, never with a torn one. Reading verifies every byte.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// One task's state at the cut.
struct TaskState {
  std::string task;
  std::string op_type;
  KernelState state;
};

// A consistent cut of a plan in memory: every task after the same piece.
struct CheckpointData {
  // The first piece after the cut.
  int64_t piece = 0;
  std::vector<TaskSignature> plan;  // plan/plan_signature.h
  std::vector<TaskState> tasks;     // tasks whose kernels have state
  KernelState user;                 // what the program saves beside them
  int32_t rank = 0;
  int32_t world_size = 1;
  // How long taking it held up the plan: the longest any one thread spent
  // saving its tasks' states (not written to disk).
  double pause_ms = 0;

  int64_t byte_size() const;
};

struct CheckpointWriteOptions {
  // After writing, keep only the newest keep_last checkpoints of the root
  // (0: keep them all).
  int keep_last = 0;
};

struct WrittenCheckpoint {
  std::string path;
  int64_t piece = 0;
  int64_t bytes = 0;  // every file written, the manifest included
  double write_ms = 0;
  // CPU time of the writing thread (user and system): what writing took
  // from the other threads of a busy machine.
  double cpu_ms = 0;
};

// "<root>/ckpt-000000000500".
std::string CheckpointPath(const std::string& root, int64_t piece);

// Writes `data` as a new checkpoint under `root` (created if missing). A
// checkpoint of the same piece already there is replaced atomically.
// Errors name the file and the system's reason; nothing is left behind.
absl::StatusOr<WrittenCheckpoint> WriteCheckpoint(
    const std::string& root, const CheckpointData& data,
    const CheckpointWriteOptions& options = {});

// Reads checkpoint directory `path` and verifies it: a missing, truncated
// or corrupt file is DataLoss naming the file (and the task and entry).
absl::StatusOr<CheckpointData> ReadCheckpoint(const std::string& path);

// The complete checkpoints under `root`, oldest first: (piece, path).
// Temporary directories of writers that did not finish are not listed.
// A root that does not exist has none.
absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> ListCheckpoints(
    const std::string& root);

// What to restore from `dir`: `dir` itself when it is a checkpoint (it
// holds a MANIFEST), else the newest checkpoint under it. NotFound when
// there is none.
absl::StatusOr<std::string> ResolveCheckpoint(const std::string& dir);

// Keeps the newest `keep` checkpoints under `root` and removes the older
// ones (keep < 1: none), and the temporary directories of writers on this
// machine that are gone.
absl::Status PruneCheckpoints(const std::string& root, int keep);

// Refuses a checkpoint of another plan: FailedPrecondition naming `path`
// and what differs (a task, an attribute, a blob's shape ...).
absl::Status CheckSamePlan(const std::string& path, const CheckpointData& data,
                           const std::vector<TaskSignature>& plan);
// The same, looser (RestoreOptions::caller_checks_plan): only the tasks
// named in `stateful` (this plan's tasks that keep state) are looked for
// in the checkpoint's plan, with the same op_type, and the checkpoint may
// hold state for no other task.
absl::Status CheckSameStatefulTasks(const std::string& path,
                                    const CheckpointData& data,
                                    const std::vector<TaskSignature>& plan,
                                    const std::vector<std::string>& stateful);

// Crash testing: with ACTORFLOW_CHECKPOINT_CRASH_AT=STEP (or STEP:N, the
// N-th time, from 1) the writing process kills itself with SIGKILL right
// after STEP. The steps, in order:
//   tmp_dir      the temporary directory exists, empty
//   data         state.bin written, not yet synced
//   data_synced  state.bin synced
//   manifest     MANIFEST written, not yet synced
//   manifest_synced
//   dir_synced   the temporary directory synced
//   renamed      renamed into place, the root not yet synced
//   root_synced
//   pruned       older checkpoints removed (keep_last)
extern const char* const kCheckpointSteps[];
extern const int kNumCheckpointSteps;

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_CHECKPOINT_H_
