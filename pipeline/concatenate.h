#ifndef ACTORFLOW_PIPELINE_CONCATENATE_H_
#define ACTORFLOW_PIPELINE_CONCATENATE_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pipeline/sample.h"

namespace actorflow::internal::pipeline {

// Samples of one type and rank joined into one, as NumPy's concatenate
// (`stack` false: along existing axis `axis`, where extents may differ and
// add up; every other axis equal) or stack (`stack` true: along a new axis
// inserted at `axis`; every extent equal). A negative axis counts from the
// end of the output's axes. Errors name the part and the axis.
absl::Status Concatenate(absl::Span<const SampleRef> parts, int64_t axis,
                         bool stack, Sample* out);

// The output's axis that `axis` names for parts of `rank` (negative: from
// the end), or an error naming the range.
absl::StatusOr<int64_t> JoinAxis(int64_t axis, int64_t rank, bool stack);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_CONCATENATE_H_
