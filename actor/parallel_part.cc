#include "actor/parallel_part.h"

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

absl::StatusOr<ParallelPart> ParallelPartOf(const KernelInitContext& ctx) {
  absl::StatusOr<int64_t> index = ctx.IntAttrOr("parallel_index", 0);
  if (!index.ok()) return index.status();
  absl::StatusOr<int64_t> num = ctx.IntAttrOr("parallel_num", 1);
  if (!num.ok()) return num.status();
  absl::StatusOr<int64_t> axis = ctx.IntAttrOr("parallel_axis", 0);
  if (!axis.ok()) return axis.status();
  if (*num < 1 || *index < 0 || *index >= *num) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['parallel_index']: ", *index,
                     " is not a part of ", *num, " (parallel_num)"));
  }
  if (*axis < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['parallel_axis']: ", *axis, " is negative"));
  }
  return ParallelPart{*index, *num, *axis};
}

}  // namespace actorflow::internal
