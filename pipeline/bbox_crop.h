#ifndef ACTORFLOW_PIPELINE_BBOX_CROP_H_
#define ACTORFLOW_PIPELINE_BBOX_CROP_H_

#include <memory>
#include <string>
#include <vector>

#include "pipeline/multi_sample_op.h"

// DALI's random_bbox_crop (SSD's crop): a random window of the image that
// keeps the objects. Inputs: boxes (pipeline/boxes.h), and optionally
// their labels ([N] or [N, 1]); outputs: the window's anchor (x, y) and
// shape (w, h), relative, float32 [2] each; the boxes whose centres lie in
// the window, in its coordinates and clipped to it; and their labels.
//
// Each round picks one of the options uniformly: a minimum overlap from
// `thresholds` (default [0]), or no crop (the whole image, with
// `allow_no_crop`, default true). For an overlap it tries `num_attempts`
// (default 1) windows: width and height each uniform in `scaling` (default
// [1, 1]) with width / height in `aspect_ratio` (default [1, 1]; a single
// ratio sets the shorter side from the longer), the anchor uniform where
// the window fits. A window holds when every box (or, without
// `all_boxes_above_threshold`, one) overlaps it by the threshold
// (`threshold_type` "iou", the default, or "overlap": the share of the
// box inside) and a box's centre lies inside; otherwise the next round.
// After `total_num_attempts` windows (default -1: no limit beside 10^6)
// it gives the whole image, as it does at once for a sample without boxes.
// Attrs: those, `ltrb` (default true; false: xywh boxes),
// `bbox_prune_threshold` (a box kept when that share of it lies in the window,
// instead of its centre).
namespace actorflow::internal::pipeline {

std::unique_ptr<MultiSampleOp> MakeRandomBboxCropOp();
std::vector<std::string> RandomBboxCropAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_BBOX_CROP_H_
