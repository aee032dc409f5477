#ifndef ACTORFLOW_PLAN_PLAN_DOT_H_
#define ACTORFLOW_PLAN_PLAN_DOT_H_

#include <string>

#include "actorflow/compiled_plan.h"

namespace actorflow::internal {

// The plan as a Graphviz digraph (`actorflow dot PLAN`): one node per task,
// boxed in one cluster per stream (the thread it runs on), and one edge per
// consumed register, labelled with its regst_desc id, the producer's and
// consumer's names for it, its register_num and its blobs' shapes. An edge
// that carries an initial register (what lets a cycle start) is dashed.
std::string PlanToDot(const CompiledPlan& compiled);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_PLAN_PLAN_DOT_H_
