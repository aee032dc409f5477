#ifndef ACTORFLOW_PIPELINE_STAGE_KERNEL_UTIL_H_
#define ACTORFLOW_PIPELINE_STAGE_KERNEL_UTIL_H_

#include <cstdint>
#include <initializer_list>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/kernel.h"
#include "pipeline/sample_list.h"

// What the stage kernels (readers, external source, per-sample stages,
// batch assembly) share: attribute checks and error wording.
namespace actorflow::internal::pipeline {

// An integer attribute of at least `min` (`fallback` when absent); the
// error names the attribute.
absl::StatusOr<int64_t> PositiveAttr(const KernelInitContext& ctx,
                                     const char* name, int64_t fallback,
                                     int64_t min);
// The first error of `statuses`, or OK.
absl::Status FirstError(std::initializer_list<absl::Status> statuses);
// A sample's error, named by operator and sample.
absl::Status SampleError(const std::string& op, const SampleHeader& h,
                         const absl::Status& error);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_STAGE_KERNEL_UTIL_H_
