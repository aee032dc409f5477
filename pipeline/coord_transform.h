#ifndef ACTORFLOW_PIPELINE_COORD_TRANSFORM_H_
#define ACTORFLOW_PIPELINE_COORD_TRANSFORM_H_

#include <memory>
#include <string>
#include <vector>

#include "pipeline/sample_ops.h"

// DALI's coord_transform on one sample: points along its last axis (a
// sample of [..., D], D coordinates each, or one point of [D]) mapped by
// an affine transform, out = M p + T, float32 [..., R]. The sample
// operator `coord_transform`: attrs `m` (R x D values, row by row; none:
// the identity, R = D; one value: that times the identity), `t` (R values;
// none: 0; one value: that for every row).
namespace actorflow::internal::pipeline {

std::unique_ptr<SampleOp> MakeCoordTransformOp();
std::vector<std::string> CoordTransformAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_COORD_TRANSFORM_H_
