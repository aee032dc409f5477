#include "pipeline/stage_kernel_util.h"

#include "absl/strings/str_cat.h"

namespace actorflow::internal::pipeline {

absl::StatusOr<int64_t> PositiveAttr(const KernelInitContext& ctx,
                                     const char* name, int64_t fallback,
                                     int64_t min) {
  auto value = ctx.IntAttrOr(name, fallback);
  if (value.ok() && *value < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr '", name, "': at least ", min, ", got ", *value));
  }
  return value;
}

absl::Status FirstError(std::initializer_list<absl::Status> statuses) {
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// A sample's error, named by operator and sample.
absl::Status SampleError(const std::string& op, const SampleHeader& h,
                         const absl::Status& error) {
  return absl::Status(error.code(),
                      absl::StrCat("operator '", op, "': ", DescribeSample(h),
                                   ": ", error.message()));
}

}  // namespace actorflow::internal::pipeline
