#ifndef ACTORFLOW_NN_DENSE_MATH_H_
#define ACTORFLOW_NN_DENSE_MATH_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "nn/cpu_isa.h"
#include "nn/dense_kernels.h"

// The arithmetic of the dense-layer kernels (nn_kernels.cc), on row-major
// float32 buffers. The kernels and the sequential reference trainer both
// call these, so a plan and the loop compute bit-identical values.
//
// Every reduction runs in a fixed order that does not depend on where the
// buffers lie (Eigen's vectorized reductions peel by alignment, which would
// change the order between a register and a std::vector); only the matrix
// product uses Eigen, whose blocking depends on the sizes alone.
//
// The code runs at the best vector level the CPU has (cpu_isa.h), chosen
// once per process: AVX-512 or AVX2+FMA products are 2-5x the SSE2 ones.
// Levels round differently, so results are bit-identical at one level, and
// agree across levels within float rounding.
namespace actorflow::internal::nn {

// The level this process computes at (the first call picks it).
Isa DenseIsa();
// One level's functions, for tests that compare levels.
const DenseKernels& DenseKernelsFor(Isa isa);

// out[m, n] = op(a) * op(b), op(x) = x or x^T. `a` is stored as
// [a_rows, a_cols], `b` as [b_rows, b_cols]; the caller has checked that the
// inner sizes agree. An inner size of 0 gives zeros.
void MatMul(const float* a, int64_t a_rows, int64_t a_cols, bool transpose_a,
            const float* b, int64_t b_rows, int64_t b_cols, bool transpose_b,
            float* out);

// out[i, j] = x[i, j] + bias[j] for x [rows, cols].
void BiasAdd(const float* x, const float* bias, int64_t rows, int64_t cols,
             float* out);

// dbias[j] = sum over i of dy[i, j], summed in row order.
void BiasAddGrad(const float* dy, int64_t rows, int64_t cols, float* dbias);

void Relu(const float* x, int64_t n, float* y);
// dx = dy where y > 0, else 0.
void ReluGrad(const float* dy, const float* y, int64_t n, float* dx);

// Softmax cross-entropy of logits [rows, classes] against integer labels.
// Returns the sum of the rows' losses (accumulated in double) and writes
// dlogits = softmax - one_hot(label): the gradient of that sum. A label
// outside [0, classes) is an error naming the row.
absl::Status SoftmaxCrossEntropy(const float* logits, const int32_t* labels,
                                 int64_t rows, int64_t classes, double* loss,
                                 float* dlogits);

// Rows whose largest logit (the first, on a tie) is at the label.
int64_t CountCorrect(const float* logits, const int32_t* labels, int64_t rows,
                     int64_t classes);

// One step of SGD with momentum on the mean gradient:
//   g = (grads[0] + grads[1] + ...) / count   (summed in list order)
//   velocity = momentum * velocity + g;  delta = -lr * velocity
// With count 0 (no sample this piece) delta is 0 and velocity unchanged.
void SgdMomentum(const std::vector<const float*>& grads, int64_t count,
                 double lr, double momentum, int64_t n, float* velocity,
                 float* delta);

// The rate of step `step` (from 0) of a schedule that multiplies `lr` by
// `decay` after every `decay_steps` steps (0: a constant rate).
double ScheduledRate(double lr, double decay, int64_t decay_steps,
                     int64_t step);

// out = terms[0] + terms[1] + ..., added left to right in float32, as the
// `add` kernel sums its inputs.
void AddInOrder(const std::vector<const float*>& terms, int64_t n, float* out);

// out[i] = (float(in[i]) - mean) * inv_std: the `normalize` kernel's
// arithmetic on bytes, vectorized.
void NormalizeBytes(const uint8_t* in, int64_t n, float mean, float inv_std,
                    float* out);

// out = weights + delta (out may be weights).
void ApplyDelta(const float* weights, const float* delta, int64_t n,
                float* out);

// Initial weights: "zeros", or "uniform" in [-scale, scale), drawn from a
// counter-based generator keyed by seed (the same on every machine).
absl::Status InitWeights(const std::string& init, double scale, uint64_t seed,
                         int64_t n, float* out);
// The window of `shape` at `offset` of the row-major array of `full_shape`
// that InitWeights(init, scale, seed, elements of full_shape) would fill:
// so a stream holding a slice of a matrix starts from the matrix's values.
absl::Status InitWeightsWindow(const std::string& init, double scale,
                               uint64_t seed,
                               const std::vector<int64_t>& full_shape,
                               const std::vector<int64_t>& offset,
                               const std::vector<int64_t>& shape, float* out);

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_DENSE_MATH_H_
