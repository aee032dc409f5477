#ifndef ACTORFLOW_NN_NN_KERNELS_H_
#define ACTORFLOW_NN_NN_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "actorflow/kernel.h"

// Kernels of dense networks on float32 row-major blobs: the forward and
// backward passes of a fully connected layer, ReLU, softmax cross-entropy,
// accuracy, SGD with momentum and the `variable` that holds weights across
// steps (docs/training.md). Batches may be dynamic: every kernel takes
// the piece's row count from its inputs, and zero rows is a valid piece.
namespace actorflow::internal::nn {

// Shared by the CPU kernels and their GPU twins (nn/gpu).
const float* Floats(ConstTensorView view);
float* Floats(TensorView view);
// Gives a dynamic output the piece's shape; a static one must already have
// it.
absl::Status Shape(TensorView out, absl::Span<const int64_t> shape);
// The two blobs have the same shape in this piece.
absl::Status SameShape(ConstTensorView a, ConstTensorView b);
// Logits and labels hold the same number of rows in this piece.
absl::Status SameRows(ConstTensorView logits, ConstTensorView labels);

// op_type "matmul": out = op(a) * op(b); attrs transpose_a, transpose_b.
class MatMulKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  // The piece's output shape; an error naming both inputs' shapes when the
  // inner sizes differ.
  absl::StatusOr<std::vector<int64_t>> OutputShape(
      absl::Span<const int64_t> a, absl::Span<const int64_t> b) const;
  bool transpose_a_ = false;
  bool transpose_b_ = false;
};

// "bias_add": out[i, j] = x[i, j] + bias[j].
class BiasAddKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
};

// "bias_add_grad": out[j] = sum over rows of dy[i, j].
class BiasAddGradKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
};

// "relu": out = max(in, 0).
class ReluKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
};

// "relu_grad": out = dy where y > 0, else 0 (y: the relu's output).
class ReluGradKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
};

// "softmax_xent": from logits [n, classes] and int32 labels [n], `loss`
// (float64 [1]: the sum of the n losses) and `dlogits` (the gradient of
// that sum).
class SoftmaxXentKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
};

// "accuracy": `out` holds int64 [1] `correct`, the rows whose arg-max logit
// is the label.
class AccuracyKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
};

// "sgd_momentum": consumes gradients of a summed loss under `grad` (one or
// more, summed in order: one per data-parallel tower) and as many `batch`
// registers whose first blob's leading dimension counts the samples behind
// them. Produces `delta`, the step to add to the weights (see SgdMomentum in
// dense_math.h); attrs lr (required), momentum (default 0), and a step
// schedule: after every `decay_steps` steps that had samples (0: never) the
// rate is multiplied by `decay` (default 1). The velocity and step count are
// this kernel's state: they never leave the task.
//
// Attrs `shard` and `shards` (default 0 of 1) let several tasks share one
// parameter's update: this one updates only elements [ShardBegin(n, shards,
// shard), ShardBegin(n, shards, shard + 1)) of the flattened gradient and its
// `delta` is that slice, 1-D. The arithmetic is elementwise, so sharded and
// whole updates are bit-identical.
class SgdMomentumKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
  // "velocity" (float32, this shard's elements) and "steps" (int64).
  bool has_state() const override { return true; }
  absl::Status SaveState(const KernelStateContext& ctx,
                         KernelState* state) override;
  absl::Status RestoreState(const KernelStateContext& ctx,
                            const KernelState& state) override;

 protected:
  // This act's samples (the `batch` inputs' rows).
  int64_t Samples(KernelContext* ctx) const;
  // This step's learning rate; counts the step when it has samples.
  double NextRate(int64_t samples);
  double lr_ = 0;
  double momentum_ = 0;
  int64_t decay_steps_ = 0;
  double decay_ = 1;
  int64_t steps_ = 0;
  int64_t begin_ = 0, end_ = 0;  // this shard's elements
  std::vector<float> velocity_;
};

// Shard k of n elements cut into `shards`: [ShardBegin(k), ShardBegin(k + 1)).
inline int64_t ShardBegin(int64_t n, int64_t shards, int64_t k) {
  return n * k / shards;
}

// "variable": the weights of one parameter. Its output `out` is normally an
// initial register (RegisterDescProto.initial_register) in a cycle with the
// optimizer: InitialOutput publishes the weights at the start of each run
// (attrs init "zeros" | "uniform", scale, seed on the first run; what the
// last run ended with after that), and each act adds its input `delta`.
// `delta` may come several times, from the shards of a sharded optimizer:
// their elements, concatenated in input order, cover the weights' elements.
// Replicas (one variable per stream, fed the same deltas) then hold equal
// weights without sending them between streams. Attrs `full_shape` and
// `offset` (i-lists) make the variable a window of a larger array: it
// starts from that window of the array's initial values (a stream that
// holds a slice of a layer's weights starts where the whole layer would).
class VariableKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
  absl::Status InitialOutput(KernelContext* ctx) override;
  // "value": the weights as last published (before the first act, the
  // initial values), float32 of the variable's shape.
  bool has_state() const override { return true; }
  absl::Status SaveState(const KernelStateContext& ctx,
                         KernelState* state) override;
  absl::Status RestoreState(const KernelStateContext& ctx,
                            const KernelState& state) override;

 protected:
  // Forward's steps, which a GPU variable replaces: fill the output with
  // the starting weights (its first act outside a cycle), and add `n`
  // elements of a delta (`to` may be `from`).
  virtual absl::Status StartOutput(KernelContext* ctx) {
    return InitialOutput(ctx);
  }
  virtual absl::Status AddDelta(KernelContext* ctx, const float* from,
                                const float* delta, int64_t n, float* to);
  // The initial weights of a blob of `shape` (a window of full_shape at
  // offset, when the attrs give one).
  absl::Status FillInitial(absl::Span<const int64_t> shape, float* to) const;
  // The weights as last published; null before the first act.
  const float* last_ = nullptr;
  // The variable's shape, and the weights a restore gave (last_ points
  // here until the first act after it).
  std::vector<int64_t> shape_;
  std::vector<float> restored_;
  std::string init_ = "zeros";
  double scale_ = 0;
  uint64_t seed_ = 0;
  std::vector<int64_t> full_shape_, offset_;
};

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_NN_KERNELS_H_
