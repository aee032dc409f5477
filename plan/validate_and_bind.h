#ifndef ACTORFLOW_PLAN_VALIDATE_AND_BIND_H_
#define ACTORFLOW_PLAN_VALIDATE_AND_BIND_H_

#include <string>
#include <vector>

#include "actorflow/compiled_plan.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// The validator's half of CompilePlan: checks `compiled->plan` and, in
// topological order, creates and Inits each task's kernel (each sees its
// inputs' blobs and states its outputs'), filling `compiled->kernels` and
// `compiled->blobs`. Returns every problem; the kernels and blobs are
// complete only when there is none.
std::vector<std::string> ValidateAndBind(const CompileOptions& options,
                                         CompiledPlan* compiled);

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_PLAN_VALIDATE_AND_BIND_H_
