#ifndef ACTORFLOW_JOB_COMPILER_H_
#define ACTORFLOW_JOB_COMPILER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/kernel_bindings.h"
#include "actorflow/proto/job.pb.h"
#include "actorflow/proto/plan.pb.h"
#include "actorflow/version.h"

// Compiling a Job (operators with placements, actorflow/proto/job.pb.h;
// written by hand, read from a file, or with actorflow/job_builder.h) into
// a Plan that a Session runs.
//
// CompileJob is a pure function of its arguments: any thread may call it,
// and every process of a multi-machine job compiles the same plan. It
// keeps nothing: the plan and the report are the caller's.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

struct JobCompileOptions {
  // Kernels bound for this job only; null: the registry's.
  const KernelBindings* bindings = nullptr;
  // Which CUDA devices the plan may use: an op placed on another is an
  // error naming it. Compiling for another machine (`actorflow compile`)
  // accepts every device.
  DeviceProbe probe = cuda::DeviceAvailable;
  // Registers inside a training window get one buffer, and those whose
  // lifetimes never overlap share memory (docs/jobs.md, "Memory sharing").
  // Off: every register keeps its own buffers (to compare, or to debug).
  bool share_memory = true;
};

// What the compiler made, besides the plan.
struct JobCompileReport {
  int ops = 0;
  int tasks = 0;
  // Inserted tasks: h2d and d2h copies; boxing: slice, concat, add.
  int copies = 0;
  int boxing = 0;
  int streams = 0;
  // Every buffer of every register, as the runtime counts them (a shared
  // block once).
  int64_t register_bytes = 0;
  // Memory sharing: registers given one buffer because their training
  // window runs one piece at a time; shared blocks made, the registers in
  // them, and the bytes that saved against each having its own.
  int single_buffer_registers = 0;
  int shared_blocks = 0;
  int shared_registers = 0;
  int64_t bytes_saved = 0;
  // One line per inserted task: "h2d 'x.out@gpu1' for op 'y' input 0".
  std::vector<std::string> inserted;
  // One line per op on several devices, the signatures it got (stated or
  // inferred): "op 'dw' on 2 devices: a=split(0) b=split(0) ->
  // out=partial_sum".
  std::vector<std::string> signatures;
};

struct CompiledJob {
  Plan plan;
  JobCompileReport report;
};

// Compiles `job` into a Plan: one task per operator per device of its
// placement (named after the operator, "/i" appended on several devices),
// the boxing and copy tasks between them, streams by chains, register_num
// by stages within the memory budget. Deterministic: every process of a
// multi-machine job compiles the same plan. Errors: InvalidArgument, one
// problem per line, each naming the operator and, for an edge, the input.
absl::StatusOr<CompiledJob> CompileJob(const Job& job,
                                       const JobCompileOptions& options = {});

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_JOB_COMPILER_H_
