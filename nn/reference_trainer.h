#ifndef ACTORFLOW_NN_REFERENCE_TRAINER_H_
#define ACTORFLOW_NN_REFERENCE_TRAINER_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "nn/mlp_config.h"

namespace actorflow::internal::nn {

// The same pieces through the same arithmetic (dense_math.h), one call
// after another on the caller's thread, stream by stream: what a plan must
// reproduce bit for bit.
class ReferenceTrainer {
 public:
  explicit ReferenceTrainer(const MlpConfig& config);
  absl::StatusOr<PieceResult> Run(const float* x, const int32_t* labels,
                                  int64_t rows, bool train);

 private:
  // One stream's (or, replicated, every stream's) share of a parameter.
  struct Param {
    std::vector<float> value, velocity, delta, grad;
  };
  // Per layer and stream: weights, bias and the activations kept for the
  // backward pass (a replicated layer uses stream 0's only).
  struct Slice {
    Param w, b;
    std::vector<float> z, a, dz, da_in;
  };
  struct Layer {
    LayerSplit split;
    int64_t in = 0, out = 0;
    std::vector<Slice> slices;
    std::vector<float> sum;  // a row layer's summed partials
  };
  // Stream k's input to layer i (x, a slice, or a whole activation).
  const float* Input(int i, int k, const float* x) const;
  int64_t InputWidth(int i, int k) const;
  int Streams(const Layer& layer) const;
  void Update(int64_t samples);

  MlpConfig config_;
  int64_t steps_ = 0;  // training pieces so far
  std::vector<Layer> layers_;
  std::vector<float> dlogits_;
};

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_REFERENCE_TRAINER_H_
