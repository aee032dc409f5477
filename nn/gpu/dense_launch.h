#ifndef ACTORFLOW_NN_GPU_DENSE_LAUNCH_H_
#define ACTORFLOW_NN_GPU_DENSE_LAUNCH_H_

#include <cstdint>

// Host functions that queue the device work of the dense-layer kernels on a
// stream (a cudaStream_t as void*); the caller checks each launch with
// cuda::LastLaunchError. Pointers are device memory, row-major float32
// unless stated. The arithmetic is dense_math.h's, element by element;
// reductions run in a fixed order (so a result does not depend on timing),
// which differs from the CPU's blocked products: GPU and CPU agree within
// float rounding, not bit for bit. Nothing is queued for empty work, except
// where an output must still be written (noted).
namespace actorflow::internal::nn::gpu {

// out[m, n] = op(a) * op(b) (see dense_math.h's MatMul); an inner size of
// 0 writes zeros.
void LaunchMatMul(const float* a, int64_t a_rows, int64_t a_cols,
                  bool transpose_a, const float* b, int64_t b_rows,
                  int64_t b_cols, bool transpose_b, float* out, void* stream);

void LaunchBiasAdd(const float* x, const float* bias, int64_t rows,
                   int64_t cols, float* out, void* stream);

// dbias[j] = sum over rows of dy[i, j], in row order; zero rows write
// zeros.
void LaunchBiasAddGrad(const float* dy, int64_t rows, int64_t cols,
                       float* dbias, void* stream);

void LaunchRelu(const float* x, int64_t n, float* y, void* stream);
void LaunchReluGrad(const float* dy, const float* y, int64_t n, float* dx,
                    void* stream);

// Per row: dlogits = softmax - one_hot(label) and its loss; *loss (device
// double) = the rows' losses summed in row order (0 for no rows, always
// written). `row_loss` is scratch of `rows` doubles. A label outside
// [0, classes) makes its row's loss NaN (the device cannot fail an act; the
// CPU kernel names the row).
void LaunchSoftmaxXent(const float* logits, const int32_t* labels, int64_t rows,
                       int64_t classes, double* row_loss, double* loss,
                       float* dlogits, void* stream);

// *correct (device int64) = rows whose first largest logit is the label;
// always written.
void LaunchCountCorrect(const float* logits, const int32_t* labels,
                        int64_t rows, int64_t classes, int64_t* correct,
                        void* stream);

// dense_math.h's SgdMomentum on the device: velocity and delta are n
// floats; up to kMaxGrads gradients, added in order. `count` 0 writes a
// zero delta and leaves the velocity.
constexpr int kMaxGrads = 8;
struct SgdGrads {
  const float* grad[kMaxGrads] = {};
  int count = 0;
};
void LaunchSgdMomentum(const SgdGrads& grads, int64_t count, double lr,
                       double momentum, int64_t n, float* velocity,
                       float* delta, void* stream);

}  // namespace actorflow::internal::nn::gpu

#endif  // ACTORFLOW_NN_GPU_DENSE_LAUNCH_H_
