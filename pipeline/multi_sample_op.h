#ifndef ACTORFLOW_PIPELINE_MULTI_SAMPLE_OP_H_
#define ACTORFLOW_PIPELINE_MULTI_SAMPLE_OP_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actorflow/kernel.h"
#include "pipeline/sample.h"
#include "pipeline/sample_ops.h"

// A per-sample operator of several inputs and outputs (the detection
// operators random_bbox_crop and box_encoder, slice_at and decode_slice),
// which the pipeline runs on its combine stage, as arith and cat: one
// sample of each input in, one of each output out.
namespace actorflow::internal::pipeline {

class MultiSampleOp {
 public:
  virtual ~MultiSampleOp() = default;
  // Reads and checks the attributes; errors name the attribute.
  virtual absl::Status Init(const KernelInitContext& ctx) = 0;
  // The outputs' specs for inputs of `in` (also checks how many inputs).
  virtual absl::StatusOr<std::vector<SampleSpec>> Infer(
      absl::Span<const SampleSpec> in) const = 0;
  // One sample of each input; `rng` is this sample's own (SampleRng).
  virtual absl::Status Apply(absl::Span<const SampleRef> in, SampleRng* rng,
                             absl::Span<Sample> out) const = 0;
};

// nullptr for a name that is not one.
std::unique_ptr<MultiSampleOp> MakeMultiSampleOp(const std::string& name);
// Each one's attributes.
std::map<std::string, std::vector<std::string>> MultiSampleOpAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_MULTI_SAMPLE_OP_H_
