#ifndef ACTORFLOW_CHECKPOINT_INFO_H_
#define ACTORFLOW_CHECKPOINT_INFO_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "actorflow/kernel_state.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Session::Checkpoint's settings.
struct CheckpointOptions {
  // After writing, keep only the newest keep_last checkpoints of the root
  // (0: all of them).
  int keep_last = 0;
  // How long to wait for the plan to come to a cut (see Snapshot).
  absl::Duration timeout = absl::Seconds(60);
  // The program's own entries, saved beside the plan's state and given
  // back by Restore (an epoch's running totals, a data iterator's place).
  KernelState user;
};

// A checkpoint taken or restored.
struct CheckpointInfo {
  std::string path;     // its directory
  int64_t piece = 0;    // the first piece after its cut
  KernelState user;     // Restore: the program's entries
  int64_t bytes = 0;    // Checkpoint: written, the manifest included
  double pause_ms = 0;  // Checkpoint: waiting for the cut and taking it
  double write_ms = 0;  // Checkpoint: writing and syncing
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_CHECKPOINT_INFO_H_
