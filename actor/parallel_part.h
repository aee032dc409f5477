#ifndef ACTORFLOW_ACTOR_PARALLEL_PART_H_
#define ACTORFLOW_ACTOR_PARALLEL_PART_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "actorflow/kernel.h"
#include "thread/balanced_splitter.h"

namespace actorflow::internal {

// Which part of its operator's output a task makes. The job compiler gives
// every task of an operator whose outputs are all split along one axis over
// n devices the attrs `parallel_index` (0..n-1), `parallel_num` (n) and
// `parallel_axis`: a source that reads data (idx_batches, image_batches)
// then makes only its rows of each batch, so the devices together make the
// batch once, and a variable with a `full_shape` starts from its window of
// that array's values (docs/jobs.md).
struct ParallelPart {
  int64_t index = 0;
  int64_t num = 1;
  int64_t axis = 0;
  // Its rows of a batch of `rows`: the compiler's own split (the first
  // rows % num parts one row longer).
  Range Rows(int64_t rows) const {
    return BalancedSplitter(rows, num).At(index);
  }
};

// From the task's attrs (absent: the whole, part 0 of 1). An error names
// the attr when index is not in [0, num) or the axis is negative.
absl::StatusOr<ParallelPart> ParallelPartOf(const KernelInitContext& ctx);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_PARALLEL_PART_H_
