#ifndef ACTORFLOW_PIPELINE_BOX_TRANSFORMS_H_
#define ACTORFLOW_PIPELINE_BOX_TRANSFORMS_H_

#include <memory>
#include <string>
#include <vector>

#include "pipeline/sample_ops.h"

// Boxes (pipeline/boxes.h) moved as their image is, DALI's bb_flip and
// bbox_paste, each a sample operator.
//
// `bb_flip`: mirrored as by `flip` or `crop_mirror_normalize`'s mirror:
// horizontally x -> 1 - x, vertically y -> 1 - y. Attrs `ltrb` (default
// false: xywh), `horizontal` (default 1) and `vertical` (default 0), each
// a probability, with `horizontal_stream` / `vertical_stream` for a coin
// flip shared with the image's operator (the same draw as flip's).
//
// `bbox_paste`: where they land when `paste` puts the image on a canvas
// `ratio` times its size at (`paste_x`, `paste_y`): each corner p -> p /
// ratio + paste * (ratio - 1) / ratio, per axis. Attrs `ltrb`, and
// `ratio`, `paste_x`, `paste_y` per sample as paste's (sample_args.h: the
// same fn.random values give both the same draws).
namespace actorflow::internal::pipeline {

std::unique_ptr<SampleOp> MakeBbFlipOp();
std::vector<std::string> BbFlipAttrs();
std::unique_ptr<SampleOp> MakeBboxPasteOp();
std::vector<std::string> BboxPasteAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_BOX_TRANSFORMS_H_
