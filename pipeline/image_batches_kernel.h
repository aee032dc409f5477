#ifndef ACTORFLOW_PIPELINE_IMAGE_BATCHES_KERNEL_H_
#define ACTORFLOW_PIPELINE_IMAGE_BATCHES_KERNEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "actorflow/kernel.h"
#include "pipeline/batch_schedule.h"
#include "pipeline/dataset.h"

namespace actorflow::internal::pipeline {

// op_type "image_batches": a source that decodes image files into training
// batches inside a plan or job, so an image set feeds a model the way
// idx_batches feeds it an IDX set (examples/jobs/image_mlp.pbtxt). Each
// file (JPEG or PNG, told by its bytes) is decoded (libjpeg-turbo,
// libpng) to `channels` channels, resized bilinearly to size x size where
// it is another size, and normalized as the `normalize` kernel computes,
// (pixel - mean) * (1 / std) in float32. Outputs `x` (float32 [batch,
// size * size * channels], HWC per row, dynamic) and `y` (int32 [batch],
// dynamic: the file's label).
//
// The files: `dir`, a directory of class subdirectories (labels 0..k-1 in
// sorted order, pipeline::ListImageDirectory), or `list`, a file of
// "path label" lines (pipeline::ReadFileList). Pieces follow idx_batches'
// schedule: `period` pieces per epoch (default: the set's own batches),
// piece p being batch p % period - offset of epoch p / period when that
// is one of the set's, else zero rows; each epoch visits the first `limit`
// files (0: all) in pipeline::EpochOrder(n, shuffle_window, seed, epoch).
// Attrs: dir s or list s, batch i, size i (required), channels i (1 or 3;
// 1), limit i, shuffle_window i, seed i, mean f (0), std f (1), period i,
// offset i. Placed over several devices with its outputs split(0), task i
// of n decodes only its rows of each batch (actor/parallel_part.h): the
// devices share the decoding.
//
// A file that cannot be read or decoded fails the piece, naming the file.
class ImageBatchesKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 private:
  // Row r's pixels into `to` (size * size * channels floats).
  absl::Status DecodeRow(const FileEntry& file, float* to);

  std::vector<FileEntry> files_;
  int64_t size_ = 0, channels_ = 1;
  float mean_ = 0, inv_std_ = 1;
  BatchSchedule schedule_;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_IMAGE_BATCHES_KERNEL_H_
