#ifndef ACTORFLOW_PIPELINE_FIXTURES_H_
#define ACTORFLOW_PIPELINE_FIXTURES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"

namespace actorflow::pipeline {

// Writes `count` image files made from Fashion-MNIST training images 0..
// count-1 (Debian's dataset-fashion-mnist) under out_dir/<label>/: each
// upscaled (bilinear) to size x size and made RGB by giving each channel
// its own gain; even ones JPEG (quality 90, libjpeg-turbo), odd ones PNG
// (libpng). `corrupt` more files go under out_dir/broken/: in turn a
// truncated JPEG, a truncated PNG and 1000 bytes of garbage named .jpg.
absl::Status WriteFashionImages(const std::string& out_dir, int64_t count,
                                int64_t size, int64_t corrupt);

}  // namespace actorflow::pipeline

#endif  // ACTORFLOW_PIPELINE_FIXTURES_H_
