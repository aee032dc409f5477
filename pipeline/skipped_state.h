#ifndef ACTORFLOW_PIPELINE_SKIPPED_STATE_H_
#define ACTORFLOW_PIPELINE_SKIPPED_STATE_H_

#include <vector>

#include "absl/status/statusor.h"
#include "actorflow/kernel_state.h"
#include "actorflow/skipped_sample.h"

// A pipeline's skip log in a checkpoint's user state: entries
// "pipeline.skipped.where" (int64 [n, 2]: epoch, position),
// "pipeline.skipped.lengths" (int64 [n, 2]: the name's and the error's
// bytes) and "pipeline.skipped.text" (the names and errors end to end).
namespace actorflow::internal::pipeline {

void SaveSkipped(const std::vector<SkippedSample>& samples, KernelState* state);
// An error says which entry is missing or short.
absl::StatusOr<std::vector<SkippedSample>> LoadSkipped(
    const KernelState& state);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SKIPPED_STATE_H_
