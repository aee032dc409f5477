#ifndef ACTORFLOW_PIPELINE_SAMPLE_OPS_H_
#define ACTORFLOW_PIPELINE_SAMPLE_OPS_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/kernel.h"
#include "pipeline/image_codec.h"
#include "pipeline/sample.h"

// The per-sample operators a pipeline stage applies, with what they read
// from their task's attributes and the largest sample they can make.
namespace actorflow::internal::pipeline {

// A sample's type and largest shape; -1 is a dimension with no bound known
// before the data is seen (a decoded image's height).
struct SampleSpec {
  DataType type = DT_UINT8;
  std::vector<int64_t> max_shape;

  bool bounded() const {
    for (int64_t d : max_shape) {
      if (d < 0) return false;
    }
    return true;
  }
};

class SampleOp {
 public:
  virtual ~SampleOp() = default;
  // Reads and checks the attributes; errors name the attribute.
  virtual absl::Status Init(const KernelInitContext& ctx) = 0;
  // What the op makes of samples of `in`; an error if it cannot take them.
  virtual absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const = 0;
  // One sample. `rng` is this sample's own (see SampleRng).
  virtual absl::Status Apply(const SampleRef& in, SampleRng* rng,
                             Sample* out) = 0;
  // Whether on_error=skip_sample may drop a sample this op fails on (read
  // and decode failures: bad data, not a bad pipeline).
  virtual bool skippable() const { return false; }
  // Whether Apply would give `in` back unchanged (a crop to the whole
  // image): a chain then hands `in` to the next op without the copy.
  virtual bool PassesThrough(const SampleRef& in) const { return false; }

  // An op the batch may run as it places a sample (`pipeline.batch`'s
  // finishing ops): its output is large beside its input and it is cheap to
  // compute, so writing it once into the batch's row costs less than
  // writing a sample and copying that (crop_mirror_normalize's floats).
  virtual bool finishes_in_batch() const { return false; }
  // The shape Apply would give `in`, or the error Apply would return for
  // it (whatever `rng` draws). Ops that finish in the batch only.
  virtual absl::StatusOr<SampleShape> OutputShape(const SampleRef& in) const;
  // Apply, writing OutputShape(in)'s elements of Infer's type to `to`.
  virtual absl::Status ApplyInto(const SampleRef& in, SampleRng* rng,
                                 uint8_t* to);
};

// "decode", "resize", "crop", "flip", "crop_mirror_normalize", "cast",
// "sleep"; NotFound for anything else.
absl::StatusOr<std::unique_ptr<SampleOp>> MakeSampleOp(const std::string& name);
std::vector<std::string> SampleOpNames();

// The decoders' own attrs: `color` ("rgb" or "gray"), `max_pixels`,
// `adjust_orientation` (false).
absl::StatusOr<DecodeOptions> DecodeAttrs(const KernelInitContext& ctx);

// DALI's augmentations and the other operators augment_ops.cc lists (its
// AugmentOps table: color, geometry, noise, standardize, ...). nullptr for
// any other name.
std::unique_ptr<SampleOp> MakeAugmentOp(const std::string& name);
// Each one's attributes.
std::map<std::string, std::vector<std::string>> AugmentOpAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SAMPLE_OPS_H_
