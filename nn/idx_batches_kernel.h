#ifndef ACTORFLOW_NN_IDX_BATCHES_KERNEL_H_
#define ACTORFLOW_NN_IDX_BATCHES_KERNEL_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "actorflow/kernel.h"
#include "pipeline/batch_schedule.h"
#include "pipeline/dataset.h"

namespace actorflow::internal::nn {

// op_type "idx_batches": a source that serves batches of an IDX image set
// (MNIST format) from inside a plan, so a training plan needs no thread of
// the caller's per piece. Outputs `x` (float32 [batch, features], dynamic:
// (pixel - mean) * (1 / std), as the `normalize` kernel computes) and `y`
// (int32 [batch], dynamic).
//
// Pieces follow a repeating schedule of `period` pieces per epoch (default:
// this set's own batches): piece p is batch q = p % period - offset of
// epoch p / period when 0 <= q < batches, else a piece of zero rows. Each
// epoch visits the first `limit` samples (0: all) in the order
// pipeline::EpochOrder(n, shuffle_window, seed, epoch) gives, as the
// pipeline's `idx_reader` does. Attrs: images s, labels s (required),
// batch i (required), limit i, shuffle_window i, seed i, mean f (0),
// std f (1), period i, offset i. Placed over several devices with its
// outputs split(0) (the default for a source), task i of n makes only its
// rows of each batch (actor/parallel_part.h), so the batch is read once.
//
// Init reads the headers only; the data is read at the first act, once per
// process for all the tasks that read the same files.
class IdxBatchesKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 private:
  struct Data {
    pipeline::IdxArray images, labels;
  };
  // The files' contents, shared with every task of this process that reads
  // them while any of them lives.
  static absl::StatusOr<std::shared_ptr<const Data>> Load(
      const std::string& images, const std::string& labels);

  std::string images_path_, labels_path_;
  int64_t features_ = 0;
  float mean_ = 0, inv_std_ = 1;
  pipeline::BatchSchedule schedule_;
  std::shared_ptr<const Data> data_;
};

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_IDX_BATCHES_KERNEL_H_
