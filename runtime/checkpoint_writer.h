#ifndef ACTORFLOW_RUNTIME_CHECKPOINT_WRITER_H_
#define ACTORFLOW_RUNTIME_CHECKPOINT_WRITER_H_

#include <optional>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/checkpoint.h"

namespace actorflow::internal {

// Writes checkpoints under one root on a thread of its own, one at a time,
// so that the program goes on while a checkpoint is written and synced
// (the pause it sees is the Snapshot alone). Used from one thread.
class CheckpointWriter {
 public:
  CheckpointWriter(std::string root, CheckpointWriteOptions options)
      : root_(std::move(root)), options_(options) {}
  ~CheckpointWriter() { (void)Flush(); }
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Waits for the write in progress; if it failed, returns its error and
  // drops `data`. Else starts writing `data`.
  absl::Status Submit(CheckpointData data);
  // Waits for the write in progress: OK, or its error.
  absl::Status Flush();
  const std::string& root() const { return root_; }
  // The last checkpoint written completely (after Flush or Submit).
  const std::optional<WrittenCheckpoint>& last() const { return last_; }

 private:
  const std::string root_;
  const CheckpointWriteOptions options_;
  std::thread thread_;
  // Written by thread_, read after joining it.
  absl::StatusOr<WrittenCheckpoint> result_ = absl::UnknownError("");
  CheckpointData data_;
  std::optional<WrittenCheckpoint> last_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_RUNTIME_CHECKPOINT_WRITER_H_
