#ifndef ACTORFLOW_ACTOR_KERNEL_HARNESS_H_
#define ACTORFLOW_ACTOR_KERNEL_HARNESS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "actor/kernel.h"
#include "actor/regst.h"
#include "proto/plan.pb.h"

namespace actorflow {

// Runs one kernel outside a plan, one piece at a time: for unit tests of
// kernels, the built-in ones and yours. The task's inputs are `num_inputs`
// registers consumed under "in" and, if `has_output`, one produced under
// "out", all of `elem_cnt` floats in host memory.
class KernelHarness {
 public:
  // Creates the kernel named by task.kernel().op_type and runs its Init.
  static absl::StatusOr<std::unique_ptr<KernelHarness>> Create(
      const TaskProto& task, int num_inputs, bool has_output, int64_t elem_cnt);

  float* input(int i) { return inputs_[i]->data(); }
  const float* output() const { return output_ ? output_->data() : nullptr; }
  // Calls Forward for `piece_id` (the inputs carry that piece id).
  absl::Status Run(int64_t piece_id);
  const Kernel& kernel() const { return *kernel_; }

 private:
  KernelHarness() = default;

  TaskProto task_;
  std::vector<std::unique_ptr<RegstDesc>> descs_;
  std::vector<Regst*> inputs_;
  Regst* output_ = nullptr;
  std::unique_ptr<Kernel> kernel_;
  KernelContext ctx_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTOR_KERNEL_HARNESS_H_
