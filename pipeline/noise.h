#ifndef ACTORFLOW_PIPELINE_NOISE_H_
#define ACTORFLOW_PIPELINE_NOISE_H_

#include "absl/status/status.h"
#include "pipeline/sample.h"

// DALI's noise operators (fn.noise.*) on samples of uint8 or float32, any
// shape: the output has the input's shape and type, computed values stored
// as every image operator stores them (pipeline/pixel_store.h: uint8
// clamped and rounded). The draws come from the sample's generator, one
// after another in the sample's element order, so a sample's noise is the
// same whatever thread makes it.
namespace actorflow::internal::pipeline {

// Each value plus a draw from N(mean, stddev).
absl::Status GaussianNoise(const SampleRef& in, double mean, double stddev,
                           SampleRng* rng, Sample* out);

// Each pixel (the channels of an HWC image together, or each value alone
// when `per_channel` or the sample is not HWC) becomes, with probability
// `prob`, `salt` (with probability salt_vs_pepper) or `pepper`.
absl::Status SaltAndPepperNoise(const SampleRef& in, double prob,
                                double salt_vs_pepper, float salt, float pepper,
                                bool per_channel, SampleRng* rng, Sample* out);
// Salt and pepper when not given: the type's top and bottom (255 and 0 for
// uint8; 1 and -1 for float32, as DALI's).
float DefaultSalt(DataType type);
float DefaultPepper(DataType type);

// Shot (Poisson) noise: each value v becomes factor * Poisson(max(0, v) /
// factor); factor 0 leaves the sample as it is.
absl::Status ShotNoise(const SampleRef& in, double factor, SampleRng* rng,
                       Sample* out);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_NOISE_H_
