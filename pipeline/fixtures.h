#ifndef ACTORFLOW_PIPELINE_FIXTURES_H_
#define ACTORFLOW_PIPELINE_FIXTURES_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "pipeline/sample.h"

namespace actorflow::internal::pipeline {

// Writes `count` image files made from Fashion-MNIST training images 0..
// count-1 (Debian's dataset-fashion-mnist) under out_dir/<label>/: each
// upscaled (bilinear) to size x size and made RGB by giving each channel
// its own gain; even ones JPEG (quality 90, libjpeg-turbo), odd ones PNG
// (libpng). `corrupt` more files go under out_dir/broken/: in turn a
// truncated JPEG, a truncated PNG, 1000 bytes of garbage named .jpg, and a
// small JPEG whose header claims 60000 x 60000 pixels (huge<k>.jpg).
absl::Status WriteFashionImages(const std::string& out_dir, int64_t count,
                                int64_t size, int64_t corrupt);

// A photo-sized RGB image with a photo's statistics, made from `seed`:
// value noise over six octaves with amplitude growing with scale (the 1/f
// spectrum of natural images), a few soft-edged shapes in their own colors,
// and fine grain, so a JPEG of it costs what a photo's costs to decode (a
// 500 x 375 one at quality 90 is 60-120 KB).
void MakePhotoImage(uint64_t seed, int64_t height, int64_t width, Sample* out);

// A small valid JPEG (a 64 x 48 photo) whose frame header claims height x
// width: what a decompression bomb looks like to a decoder.
absl::StatusOr<std::string> JpegClaiming(int height, int width);

// Writes `count` JPEG photos (MakePhotoImage, quality 90) of height x width
// under out_dir/<class>/ (`classes` classes, round robin).
absl::Status WritePhotoImages(const std::string& out_dir, int64_t count,
                              int64_t height, int64_t width, int64_t classes);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_FIXTURES_H_
