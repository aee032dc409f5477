// The emulated device's dense-layer kernels (--config=emulated_gpu): the
// arithmetic of dense_launch.cu as host loops on the stream's worker
// thread, in stream order, with the same summation order.
#include <cmath>
#include <cstring>

#include "memory/cuda_emulation.h"
#include "nn/gpu/dense_launch.h"

namespace actorflow::internal::nn::gpu {
namespace {

void Enqueue(void* stream, std::function<void()> work) {
  cuda::emulated::Enqueue(stream, std::move(work));
}

}  // namespace

void LaunchMatMul(const float* a, int64_t a_rows, int64_t a_cols,
                  bool transpose_a, const float* b, int64_t b_rows,
                  int64_t b_cols, bool transpose_b, float* out, void* stream) {
  const int64_t m = transpose_a ? a_cols : a_rows;
  const int64_t k = transpose_a ? a_rows : a_cols;
  const int64_t n = transpose_b ? b_rows : b_cols;
  if (m == 0 || n == 0) return;
  Enqueue(stream, [=] {
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        float sum = 0;
        for (int64_t p = 0; p < k; ++p) {
          const float x = transpose_a ? a[p * a_cols + i] : a[i * a_cols + p];
          const float y = transpose_b ? b[j * b_cols + p] : b[p * b_cols + j];
          sum += x * y;
        }
        out[i * n + j] = sum;
      }
    }
  });
}

void LaunchBiasAdd(const float* x, const float* bias, int64_t rows,
                   int64_t cols, float* out, void* stream) {
  if (rows == 0 || cols == 0) return;
  Enqueue(stream, [=] {
    for (int64_t i = 0; i < rows * cols; ++i) out[i] = x[i] + bias[i % cols];
  });
}

void LaunchBiasAddGrad(const float* dy, int64_t rows, int64_t cols,
                       float* dbias, void* stream) {
  if (cols == 0) return;
  Enqueue(stream, [=] {
    for (int64_t j = 0; j < cols; ++j) {
      float sum = 0;
      for (int64_t i = 0; i < rows; ++i) sum += dy[i * cols + j];
      dbias[j] = sum;
    }
  });
}

void LaunchRelu(const float* x, int64_t n, float* y, void* stream) {
  if (n == 0) return;
  Enqueue(stream, [=] {
    for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
  });
}

void LaunchReluGrad(const float* dy, const float* y, int64_t n, float* dx,
                    void* stream) {
  if (n == 0) return;
  Enqueue(stream, [=] {
    for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
  });
}

void LaunchSoftmaxXent(const float* logits, const int32_t* labels, int64_t rows,
                       int64_t classes, double* row_loss, double* loss,
                       float* dlogits, void* stream) {
  Enqueue(stream, [=] {
    double total = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const float* z = logits + i * classes;
      float* d = dlogits + i * classes;
      float top = z[0];
      for (int64_t j = 1; j < classes; ++j) top = z[j] > top ? z[j] : top;
      double sum = 0;
      for (int64_t j = 0; j < classes; ++j) {
        d[j] = std::exp(z[j] - top);
        sum += d[j];
      }
      const float inv = static_cast<float>(1.0 / sum);
      for (int64_t j = 0; j < classes; ++j) d[j] *= inv;
      const int32_t label = labels[i];
      if (label < 0 || label >= classes) {
        row_loss[i] = std::nan("");
        continue;
      }
      row_loss[i] = std::log(sum) - static_cast<double>(z[label] - top);
      d[label] -= 1.0f;
    }
    for (int64_t i = 0; i < rows; ++i) total += row_loss[i];
    *loss = total;
  });
}

void LaunchCountCorrect(const float* logits, const int32_t* labels,
                        int64_t rows, int64_t classes, int64_t* correct,
                        void* stream) {
  Enqueue(stream, [=] {
    int64_t count = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const float* z = logits + i * classes;
      int64_t best = 0;
      for (int64_t j = 1; j < classes; ++j) {
        if (z[j] > z[best]) best = j;
      }
      count += best == labels[i];
    }
    *correct = count;
  });
}

void LaunchSgdMomentum(const SgdGrads& grads, int64_t count, double lr,
                       double momentum, int64_t n, float* velocity,
                       float* delta, void* stream) {
  if (n == 0) return;
  const float inv_count =
      count > 0 ? static_cast<float>(1.0 / static_cast<double>(count)) : 0.0f;
  const float mu = static_cast<float>(momentum);
  const float step = static_cast<float>(-lr);
  Enqueue(stream, [=] {
    for (int64_t i = 0; i < n; ++i) {
      if (count == 0) {
        delta[i] = 0.0f;
        continue;
      }
      float g = grads.grad[0][i];
      for (int k = 1; k < grads.count; ++k) g += grads.grad[k][i];
      const float v = mu * velocity[i] + g * inv_count;
      velocity[i] = v;
      delta[i] = step * v;
    }
  });
}

}  // namespace actorflow::internal::nn::gpu
