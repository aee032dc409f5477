#ifndef ACTORFLOW_PIPELINE_CROP_OUTSIDE_H_
#define ACTORFLOW_PIPELINE_CROP_OUTSIDE_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/image_ops.h"
#include "pipeline/sample.h"

// Crop windows that may leave the image (DALI's out_of_bounds_policy "pad"
// and "trim_to_shape").
namespace actorflow::internal::pipeline {

// The top-left corner of a window of height x width over an in_h x in_w
// image (negative: above or left of it). Where the window fits, exactly
// PlaceCrop's (the same draws); else, along an axis it does not fit,
// roundf(p * (in - size)), p the anchor (0.5 centred, or drawn uniformly
// for a random place), so it sticks out on both sides.
void PlaceCropAnywhere(int64_t in_h, int64_t in_w, int64_t height,
                       int64_t width, const CropPlace& place, SampleRng* rng,
                       int64_t* y, int64_t* x);

// The window [y, y + height) x [x, x + width) of an HWC image, any element
// type: the part outside the image filled with `fill` (one value, or one
// per channel; none: 0), or with `trim`, the window cut to the image (at
// least nothing: an empty window is an error).
absl::Status CropOutside(const SampleRef& in, int64_t y, int64_t x,
                         int64_t height, int64_t width,
                         const std::vector<float>& fill, bool trim,
                         Sample* out);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_CROP_OUTSIDE_H_
