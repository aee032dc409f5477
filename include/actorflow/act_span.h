#ifndef ACTORFLOW_ACT_SPAN_H_
#define ACTORFLOW_ACT_SPAN_H_

#include <chrono>
#include <cstdint>

#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// When one act ran, for traces (RunOptions::trace). On a CPU stream: the
// kernel's call. On an asynchronous stream (host or CUDA): from queueing
// the kernel to the poller seeing it done, i.e. until its outputs could be
// delivered. Nanoseconds of the steady clock.
struct ActSpan {
  int64_t piece = 0;
  int64_t begin_ns = 0;
  int64_t end_ns = 0;
};

inline int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_ACT_SPAN_H_
