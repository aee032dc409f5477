#ifndef ACTORFLOW_RUNTIME_PLAN_VALIDATOR_H_
#define ACTORFLOW_RUNTIME_PLAN_VALIDATOR_H_

#include <string>
#include <vector>

#include "proto/plan.pb.h"

namespace actorflow {

// Every problem that would keep `plan` from running, one message each,
// naming the task, the regst_desc id and the field. Empty when the plan is
// valid. Checks: tasks present and uniquely named and numbered; streams and
// memory cases this build and machine can serve; descriptors produced once,
// with register_num >= 1, elem_cnt >= 0 and producer/consumer lists that
// match the tasks; every consumed id produced; known op_types whose kernels
// accept their attributes and signature; no cycle.
std::vector<std::string> ValidatePlan(const Plan& plan);

}  // namespace actorflow

#endif  // ACTORFLOW_RUNTIME_PLAN_VALIDATOR_H_
