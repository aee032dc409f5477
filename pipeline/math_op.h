#ifndef ACTORFLOW_PIPELINE_MATH_OP_H_
#define ACTORFLOW_PIPELINE_MATH_OP_H_

#include <memory>
#include <string>
#include <vector>

#include "pipeline/sample_ops.h"

// DALI's math functions of one sample (nvidia.dali.math), element by
// element: the sample operator `math`, attr `fn`:
// - "abs", "floor", "ceil", "clamp" (attrs `lo`, `hi`), "min", "max" (with
//   the number `value`): the input's type kept (integers saturate);
// - "fabs", "sqrt", "rsqrt", "cbrt", "exp", "log", "log2", "log10", "sin",
// "cos",
//   "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "asinh",
//   "acosh", "atanh", "pow" (to the number `value`), "rpow" (`value` to
//   the element's power): float32.
namespace actorflow::internal::pipeline {

std::unique_ptr<SampleOp> MakeMathOp();
std::vector<std::string> MathAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_MATH_OP_H_
