#ifndef ACTORFLOW_PIPELINE_RESAMPLE_H_
#define ACTORFLOW_PIPELINE_RESAMPLE_H_

#include <cstdint>
#include <vector>

#include "pipeline/image_ops.h"
#include "pipeline/sample.h"

// Antialiased resampling, for ResizeWindow's `antialias`: the triangle
// (linear) filter, widened by the scale where the image shrinks, so that
// every source pixel counts (what DALI's linear resize does by default,
// INTERP_TRIANGULAR, and PIL's BILINEAR). Where it grows, the same weights
// are bilinear interpolation's.
namespace actorflow::internal::pipeline {

// Per output index o in [first, first + count): source indices
// [begin[o], begin[o] + size[o]) (relative to `origin`, the first source
// index held) and their weights, summing to 1, at weights[o * width].
struct FilterTaps {
  std::vector<int64_t> begin;
  std::vector<int64_t> size;
  std::vector<float> weights;
  int64_t width = 0;  // the most taps of any output
};
FilterTaps TriangleTaps(int64_t in_size, int64_t out_size, int64_t first,
                        int64_t count, int64_t origin);
// The source pixels [begin, end) that TriangleTaps' outputs [first, first
// + count) read, count > 0.
void TriangleSourceRange(int64_t in_size, int64_t out_size, int64_t first,
                         int64_t count, int64_t* begin, int64_t* end);

// ResizeWindow's window, with TriangleTaps along both axes (the caller
// has checked the arguments and that `in` holds what the taps read).
void ResampleWindow(const SampleRef& in, const ResizeArea& area, int64_t height,
                    int64_t width, const CropWindow& window, int64_t out_h,
                    int64_t out_w, Sample* out);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_RESAMPLE_H_
