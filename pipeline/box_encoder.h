#ifndef ACTORFLOW_PIPELINE_BOX_ENCODER_H_
#define ACTORFLOW_PIPELINE_BOX_ENCODER_H_

#include <memory>
#include <string>
#include <vector>

#include "pipeline/multi_sample_op.h"

// DALI's box_encoder (SSD's matching): ltrb boxes (pipeline/boxes.h) and
// their int32 labels ([N] or [N, 1]) in; out, one row per anchor, float32
// [A, 4] and int32 [A]. Each box claims the anchor it overlaps most (IoU,
// the later anchor on a tie); every other anchor takes the box it overlaps
// most if that IoU exceeds `criteria` (default 0.5). A matched anchor gives
// its box as (centre x, centre y, width, height) and the box's label; an
// unmatched one itself so and label 0. With `offset`, rows are SSD's
// regression targets instead: ((c_box - c_anchor) / wh_anchor - means[0:2])
// / stds[0:2] and (log(wh_box / wh_anchor) - means[2:4]) / stds[2:4], every
// value first times `scale`; unmatched rows 0. Attrs: `anchors` (ltrb, 4
// values each), `criteria`, `offset`, `scale` (default 1), `means`
// (default 0s), `stds` (default 1s).
namespace actorflow::internal::pipeline {

std::unique_ptr<MultiSampleOp> MakeBoxEncoderOp();
std::vector<std::string> BoxEncoderAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_BOX_ENCODER_H_
