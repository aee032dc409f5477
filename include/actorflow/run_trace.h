#ifndef ACTORFLOW_RUN_TRACE_H_
#define ACTORFLOW_RUN_TRACE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/act_span.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// What RunOptions::trace records: per task, one span per act.
struct RunTrace {
  struct Task {
    std::string name;
    std::string stream;  // StreamKey::ToString(), e.g. "m0/gpu0/s1"
    bool async = false;  // spans run from launch to completion
    std::vector<ActSpan> spans;
  };
  int64_t origin_ns = 0;    // when the sources were started
  std::vector<Task> tasks;  // in plan order
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_RUN_TRACE_H_
