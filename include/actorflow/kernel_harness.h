#ifndef ACTORFLOW_KERNEL_HARNESS_H_
#define ACTORFLOW_KERNEL_HARNESS_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "actorflow/blob_desc.h"
#include "actorflow/kernel.h"
#include "actorflow/register_view.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Runs one kernel outside a plan, one piece at a time: for unit tests of
// kernels, the built-in ones and yours. The task's inputs are registers
// consumed under "in" with the blobs given; its output, if `has_output`, is
// produced under "out" with the blobs the kernel's Init infers, or else the
// `output_blobs` given (as a plan states a source's). All in host memory.
// Part of the SDK (in libactorflow.so): a kernel library's own tests use it
// as the project's do. Not thread-safe; use one harness from one thread.
class KernelHarness {
 public:
  // `task` is the task as a plan file spells it (a TaskProto in text
  // format), its inputs and outputs left out:
  //   name: "affine" kernel { op_type: "affine"
  //                           attr { key: "scale" value { f: 3 } } }
  // Creates the kernel registered for its op_type (CPU) and runs its Init.
  // Errors: the text's line and column, or what Init said.
  static absl::StatusOr<std::unique_ptr<KernelHarness>> Create(
      absl::string_view task, std::vector<std::vector<BlobDesc>> inputs,
      bool has_output, std::vector<BlobDesc> output_blobs = {});
  // Inputs (and a stated output) of one float32 blob of elem_cnt values.
  static absl::StatusOr<std::unique_ptr<KernelHarness>> Create(
      absl::string_view task, int num_inputs, bool has_output,
      int64_t elem_cnt);

  ~KernelHarness();

  // Input i's register, to fill before Run (writable here).
  RegisterView input(int i) const;
  // The output register after Run; an empty view without output.
  ConstRegisterView output() const;
  // The first blob's floats (float32 blobs; null otherwise).
  float* input_floats(int i) const;
  const float* output_floats() const;
  // Calls Forward for `piece_id` (the inputs carry that piece id); the
  // output's dynamic blobs start at their maximum shape, as in a plan.
  absl::Status Run(int64_t piece_id);
  const Kernel& kernel() const;

 private:
  // The registers and the kernel's context: runtime layout, kept out of
  // this header (the SDK's).
  struct State;
  KernelHarness();

  std::unique_ptr<State> state_;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_KERNEL_HARNESS_H_
