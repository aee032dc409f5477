#ifndef ACTORFLOW_COMPILED_PLAN_H_
#define ACTORFLOW_COMPILED_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "actorflow/blob_desc.h"
#include "actorflow/kernel.h"
#include "actorflow/kernel_bindings.h"
#include "actorflow/plan_validator.h"
#include "actorflow/proto/plan.pb.h"
#include "actorflow/register_limit.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// A plan checked and ready to run: every problem ValidatePlan knows is
// absent, every descriptor's blobs are known (stated or inferred), and
// every task's kernel has been created and Init'ed, once. `actorflow
// validate`, `actorflow run` and Session all start from this.
struct CompiledPlan {
  // The plan as given, with every produced descriptor's `blob` entries
  // filled in (inferred where the plan left them out).
  Plan plan;
  // Per task, in plan order.
  std::vector<std::unique_ptr<Kernel>> kernels;
  // Every produced descriptor's blobs, by regst_desc_id.
  std::map<int64_t, std::vector<BlobDesc>> blobs;
};

// kDefaultMaxRegisterBytes, and each register counted as at least
// kRegisterOverheadBytes for its bookkeeping.
inline constexpr int64_t kRegisterOverheadBytes = 256;

// One buffer of a register holding `blobs`, as the limit counts it.
int64_t RegisterBufferBytes(const std::vector<BlobDesc>& blobs);

struct CompileOptions {
  // Which CUDA devices are usable (tests pass their own).
  DeviceProbe probe = cuda::DeviceAvailable;
  // Kernels bound for this plan only; null: the registry's.
  const KernelBindings* bindings = nullptr;
  // A plan whose registers need more (see kDefaultMaxRegisterBytes) is
  // refused, before anything is allocated.
  int64_t max_register_bytes = kDefaultMaxRegisterBytes;
  // Accept tasks on any machine_id >= 0: a whole multi-machine plan, as
  // `actorflow validate` and each process of a job check it before taking
  // their share (net/plan_partition.h). A Session runs machine 0 only.
  bool multi_machine = false;
};

// Checks `plan`, infers its shapes in topological order (each kernel's Init
// sees its inputs' blobs and states its outputs') and keeps the kernels.
// Errors: InvalidArgument with every problem, one per line.
absl::StatusOr<std::unique_ptr<CompiledPlan>> CompilePlan(
    Plan plan, const CompileOptions& options = {});

// One line per blob of every register, in plan order:
//   task 'src' (task_id 1) out (regst_desc 10, register_num 2): img: uint8 [28,
//   28] dynamic
// and "(no blobs: a control token)" for a register without any.
std::string DescribeShapes(const CompiledPlan& compiled);

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_COMPILED_PLAN_H_
