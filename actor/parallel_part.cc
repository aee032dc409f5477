#include "actor/parallel_part.h"

#include "absl/strings/str_cat.h"

namespace actorflow {

absl::StatusOr<ParallelPart> ParallelPartOf(const KernelInitContext& ctx) {
  absl::StatusOr<int64_t> index = ctx.IntAttrOr("parallel_index", 0);
  if (!index.ok()) return index.status();
  absl::StatusOr<int64_t> num = ctx.IntAttrOr("parallel_num", 1);
  if (!num.ok()) return num.status();
  if (*num < 1 || *index < 0 || *index >= *num) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['parallel_index']: ", *index,
                     " is not a part of ", *num, " (parallel_num)"));
  }
  return ParallelPart{*index, *num};
}

}  // namespace actorflow
