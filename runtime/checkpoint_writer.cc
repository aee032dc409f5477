#include "runtime/checkpoint_writer.h"

#include <utility>

namespace actorflow::internal {

absl::Status CheckpointWriter::Flush() {
  if (!thread_.joinable()) return absl::OkStatus();
  thread_.join();
  if (!result_.ok()) return result_.status();
  last_ = *result_;
  return absl::OkStatus();
}

absl::Status CheckpointWriter::Submit(CheckpointData data) {
  absl::Status previous = Flush();
  if (!previous.ok()) return previous;
  data_ = std::move(data);
  thread_ = std::thread(
      [this] { result_ = WriteCheckpoint(root_, data_, options_); });
  return absl::OkStatus();
}

}  // namespace actorflow::internal
