#ifndef ACTORFLOW_SKIPPED_SAMPLE_H_
#define ACTORFLOW_SKIPPED_SAMPLE_H_

#include <cstdint>
#include <string>

#include "actorflow/version.h"

// What a pipeline with on_error=skip_sample reports for each sample it
// dropped (Pipeline::skipped(), actorflow/pipeline.h). Plain data.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Where the sample was in its epoch, its name (the file) and why it was
// dropped.
struct SkippedSample {
  int64_t epoch = 0;
  int64_t position = 0;
  std::string name;
  std::string error;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_SKIPPED_SAMPLE_H_
