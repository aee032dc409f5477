#ifndef ACTORFLOW_EXAMPLES_PIPELINE_IMAGE_PIPELINE_LIB_H_
#define ACTORFLOW_EXAMPLES_PIPELINE_IMAGE_PIPELINE_LIB_H_

#include <cstdint>
#include <memory>
#include <string>

#include "actorflow/pipeline.h"

namespace actorflow::internal::examples {

// The image pipeline of //examples/pipeline:image_pipeline: read the files
// of `dir`, decode to RGB, resize the shorter side to `resize` (0: keep),
// random-crop `crop` x `crop`, flip half of them, normalize with the
// ImageNet mean and std to float32 CHW, batch. Outputs "images" and
// "labels".
struct ImagePipelineConfig {
  std::string dir;
  int64_t resize = 256;
  int64_t crop = 224;
  int64_t shuffle_window = 0;
  int64_t max_pixels = 67108864;  // the decode's limit (0: none)
};

std::unique_ptr<Pipeline> MakeImagePipeline(const ImagePipelineConfig& config,
                                            PipelineOptions options);

// An FNV-style hash of 8-byte words over a batch's bytes (every output's data
// and sample shapes), folded into `hash`: order-sensitive, so equal checksums
// mean equal batches in equal order.
uint64_t HashBatch(const BatchView& batch, uint64_t hash);
constexpr uint64_t kHashSeed = 14695981039346656037ULL;
// The hash as a JSON-safe integer (53 bits).
inline uint64_t JsonChecksum(uint64_t hash) {
  return hash & ((1ULL << 53) - 1);
}

}  // namespace actorflow::internal::examples

#endif  // ACTORFLOW_EXAMPLES_PIPELINE_IMAGE_PIPELINE_LIB_H_
