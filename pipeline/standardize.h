#ifndef ACTORFLOW_PIPELINE_STANDARDIZE_H_
#define ACTORFLOW_PIPELINE_STANDARDIZE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pipeline/sample.h"
#include "pipeline/sample_ops.h"

// DALI's fn.normalize on one sample: out = scale * (in - mean) / stddev +
// shift, float32, with the mean and the standard deviation either given
// (one value each) or computed from the sample over `axes` (each position
// along the other axes its own). The per-sample operator `standardize`;
// actorflow's own `normalize` works on batches.
namespace actorflow::internal::pipeline {

struct StandardizeSpec {
  std::vector<int64_t> axes;  // reduced; empty: every axis
  bool mean_given = false, stddev_given = false;
  double mean = 0, stddev = 1;  // when given (stddev > 0)
  double scale = 1, shift = 0;
  // Added to the variance (computed or stddev squared) before its root.
  double epsilon = 0;
  // Bessel's correction: a computed variance divides by N - ddof.
  int64_t ddof = 0;
};

// A variance of 0 with epsilon 0 (a constant region) gives `shift` there,
// not infinities. A computed standard deviation uses the given mean when
// there is one.
absl::Status Standardize(const SampleRef& in, const StandardizeSpec& spec,
                         Sample* out);

// The sample operator: attrs `axes` (i-list), `mean`, `stddev`, `scale`,
// `shift`, `epsilon` (f), `ddof` (i). Takes uint8, int32 or float32
// samples of any shape.
std::unique_ptr<SampleOp> MakeStandardizeOp();
std::vector<std::string> StandardizeAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_STANDARDIZE_H_
