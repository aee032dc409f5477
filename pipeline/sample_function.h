#ifndef ACTORFLOW_PIPELINE_SAMPLE_FUNCTION_H_
#define ACTORFLOW_PIPELINE_SAMPLE_FUNCTION_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "pipeline/sample.h"

namespace actorflow::internal::pipeline {

// A per-sample function the host program provides (the Python package's
// fn.python_function): the `function` operator's stages call it by the id
// it was registered under, from the pipeline's worker threads, one sample
// at a time per thread.
class SampleFunction {
 public:
  virtual ~SampleFunction() = default;
  // Fills every one of `outputs` (as many as the operator has) from one
  // sample of each input. An error is that sample's (skippable).
  virtual absl::Status Call(absl::Span<const SampleRef> inputs,
                            absl::Span<Sample> outputs) const = 0;
};

// The id `function` is found by (ids are never reused in a process).
int64_t RegisterSampleFunction(std::shared_ptr<const SampleFunction> function);
// Stages built with it keep their reference; a later build cannot find it.
void UnregisterSampleFunction(int64_t id);
// Null when no function has that id.
std::shared_ptr<const SampleFunction> FindSampleFunction(int64_t id);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SAMPLE_FUNCTION_H_
