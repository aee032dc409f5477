#ifndef ACTORFLOW_NN_MLP_PLAN_H_
#define ACTORFLOW_NN_MLP_PLAN_H_

#include "absl/status/statusor.h"
#include "nn/mlp_config.h"
#include "proto/plan.pb.h"

namespace actorflow::internal::nn {

// The plan, written as a job and compiled by CompileJob: every operator is
// placed over the towers (`streams` replicas of device 0) with the split
// stated as signatures, so the compiler makes task `<op>/<k>` per tower k
// (one tower: `<op>`), adds the row layers' partial sums and copies to and
// from the GPU. Per layer i (0-based; layer L = hidden.size() is the output
// layer): parameters `w<i>`, `b<i>` (variables whose registers are
// initial) with their optimizers `w<i>.sgd`, `b<i>.sgd`; the training
// branch `t.*` and the evaluation branch `e.*` (past the last row layer on
// tower 0 only). Inputs: feeds `train.x`, `train.y`, `eval.x`, `eval.y` on
// CPU device 1; or, with `data`, the sources `data.train` and `data.eval`.
// Fetches `train.loss`, `eval.loss`, `eval.correct`.
absl::StatusOr<Plan> BuildMlpPlan(const MlpConfig& config);

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_MLP_PLAN_H_
