#ifndef ACTORFLOW_PLAN_VALIDATOR_H_
#define ACTORFLOW_PLAN_VALIDATOR_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "actorflow/cuda_api.h"
#include "actorflow/proto/plan.pb.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Every problem that would keep `plan` from running, one message each,
// naming the task, the regst_desc id and the field. Empty when the plan is
// valid. Checks: tasks present and uniquely named and numbered; streams and
// memory cases this build and machine can serve (`probe` says which CUDA
// devices are usable; tests pass their own); every register in memory its
// reader's and writer's streams can address (host memory on CPU streams,
// the device's own on GPU streams, h2d/d2h bridging the two); descriptors
// produced once,
// with register_num >= 1, elem_cnt >= 0 and producer/consumer lists that
// match the tasks; every consumed id produced; known op_types whose kernels
// accept their attributes and signature; no cycle except through an
// initial register.
std::vector<std::string> ValidatePlan(
    const Plan& plan, DeviceProbe probe = cuda::DeviceAvailable);

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_PLAN_VALIDATOR_H_
