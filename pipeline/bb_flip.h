#ifndef ACTORFLOW_PIPELINE_BB_FLIP_H_
#define ACTORFLOW_PIPELINE_BB_FLIP_H_

#include <memory>
#include <string>
#include <vector>

#include "pipeline/sample_ops.h"

// DALI's bb_flip: boxes (pipeline/boxes.h) mirrored as their image is by
// `flip` or `crop_mirror_normalize`'s mirror: horizontally x -> 1 - x,
// vertically y -> 1 - y. The sample operator `bb_flip`: attrs `ltrb`
// (default false: xywh), `horizontal` (default 1) and `vertical` (default
// 0), each a probability, with `horizontal_stream` / `vertical_stream` for
// a coin flip shared with the image's operator (the same draw as flip's).
namespace actorflow::internal::pipeline {

std::unique_ptr<SampleOp> MakeBbFlipOp();
std::vector<std::string> BbFlipAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_BB_FLIP_H_
