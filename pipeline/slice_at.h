#ifndef ACTORFLOW_PIPELINE_SLICE_AT_H_
#define ACTORFLOW_PIPELINE_SLICE_AT_H_

#include <memory>
#include <string>
#include <vector>

#include "pipeline/multi_sample_op.h"

// DALI's slice with the window given per sample by other nodes (fn.slice's
// and fn.decoders.image_slice's positional anchor and shape, such as
// random_bbox_crop's): inputs data, anchor [k] and shape [k] (numbers of
// any type); entry j of both is along the data's dimension `axes`[j].
// With `normalized_anchor` / `normalized_shape` (default true) they are
// shares of that dimension's extent. The window is [round(a), round(a +
// s)) along each (half away from zero), the data's whole extent along the
// others; a window outside the data is the sample's error.
//
// `decode_slice`: the same window of an encoded image (DALI's
// decoders.image_slice), decoded as `decode` decodes it (attrs `color`,
// `max_pixels`, `adjust_orientation`; `axes` of its HWC shape) but a JPEG's
// rows and columns outside the window only entropy-decoded: the pixels of
// `decode` and then `slice_at`, for less work.
namespace actorflow::internal::pipeline {

std::unique_ptr<MultiSampleOp> MakeSliceAtOp();
std::vector<std::string> SliceAtAttrs();
std::unique_ptr<MultiSampleOp> MakeDecodeSliceOp();
std::vector<std::string> DecodeSliceAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SLICE_AT_H_
