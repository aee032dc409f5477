#ifndef ACTORFLOW_PIPELINE_BATCH_SCHEDULE_H_
#define ACTORFLOW_PIPELINE_BATCH_SCHEDULE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "actor/parallel_part.h"
#include "actorflow/kernel.h"

namespace actorflow::internal::pipeline {

// The attrs every batch source (idx_batches, image_batches) takes: batch i
// (required), limit i (0: all samples), shuffle_window i (0: in order),
// seed i, mean f (0), std f (1), period i, offset i; and the compiler's
// parallel part.
struct BatchSourceAttrs {
  int64_t batch = 1, limit = 0, shuffle_window = 0, seed = 0;
  int64_t period = 0, offset = 0;
  double mean = 0, std = 1;
  ParallelPart part;
};
// An error names the attr that is missing, mistyped or out of range.
absl::StatusOr<BatchSourceAttrs> ReadBatchSourceAttrs(
    const KernelInitContext& ctx);

// Which samples a batch source serves for each piece. Each epoch visits
// the first `limit` samples in EpochOrder(n, shuffle_window, seed, epoch)
// and is `period` pieces: piece p is batch q = p % period - offset of epoch
// p / period when 0 <= q < batches, else a piece of zero rows (so a
// training set and a test set interleave). Of batch q (its last one may be
// short), a task serves its part's rows.
class BatchSchedule {
 public:
  // `total`: the samples the set holds. An error when the part is not of
  // rows or the set's batches do not fit in the period at `offset`.
  static absl::StatusOr<BatchSchedule> Make(int64_t total,
                                            const BatchSourceAttrs& attrs);

  int64_t samples() const { return samples_; }
  // The most rows a piece gives this task.
  int64_t most_rows() const { return part_.Rows(batch_).size(); }

  // Piece p's samples for this task, in order (none: a piece of zero
  // rows). Not thread-safe: one kernel's, as its acts are.
  absl::Span<const int64_t> SamplesOf(int64_t piece);

 private:
  int64_t samples_ = 0, batch_ = 1, batches_ = 0, period_ = 1, offset_ = 0;
  int64_t shuffle_window_ = 0;
  uint64_t seed_ = 0;
  ParallelPart part_;
  int64_t order_epoch_ = -1;
  std::vector<int64_t> order_;  // of order_epoch_
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_BATCH_SCHEDULE_H_
