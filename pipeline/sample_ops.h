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
