// Device code of the dense-layer GPU kernels (see dense_launch.h). Compiled
// by nvcc in a genrule; the host side is in nn_gpu_kernels.cc. Plain CUDA:
// the products are a shared-memory tiled kernel, each output element summed
// over k in order by one thread.
#include <cuda_runtime.h>

#include "nn/gpu/dense_launch.h"

namespace actorflow::internal::nn::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kTile = 16;

cudaStream_t AsStream(void* stream) {
  return static_cast<cudaStream_t>(stream);
}

unsigned GridFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
}

#define AF_GRID_STRIDE(i, n)                                              \
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n; \
       i += int64_t{gridDim.x} * blockDim.x)

// One kTile x kTile block of out per thread block; element (i, j) sums
// op(a)[i, p] * op(b)[p, j] for p = 0, 1, ... in order.
__global__ void MatMulKernel(const float* a, int64_t a_cols, bool ta,
                             const float* b, int64_t b_cols, bool tb,
                             float* out, int64_t m, int64_t k, int64_t n) {
  __shared__ float as[kTile][kTile];
  __shared__ float bs[kTile][kTile];
  const int64_t i = blockIdx.y * int64_t{kTile} + threadIdx.y;
  const int64_t j = blockIdx.x * int64_t{kTile} + threadIdx.x;
  float sum = 0;
  for (int64_t p0 = 0; p0 < k; p0 += kTile) {
    const int64_t pa = p0 + threadIdx.x;  // column of op(a) this thread loads
    const int64_t pb = p0 + threadIdx.y;  // row of op(b) this thread loads
    as[threadIdx.y][threadIdx.x] =
        i < m && pa < k ? (ta ? a[pa * a_cols + i] : a[i * a_cols + pa]) : 0.0f;
    bs[threadIdx.y][threadIdx.x] =
        pb < k && j < n ? (tb ? b[j * b_cols + pb] : b[pb * b_cols + j]) : 0.0f;
    __syncthreads();
    const int64_t left = k - p0 < kTile ? k - p0 : kTile;
    for (int64_t p = 0; p < left; ++p) {
      sum += as[threadIdx.y][p] * bs[p][threadIdx.x];
    }
    __syncthreads();
  }
  if (i < m && j < n) out[i * n + j] = sum;
}

__global__ void BiasAddKernel(const float* x, const float* bias, int64_t cols,
                              float* out, int64_t n) {
  AF_GRID_STRIDE(i, n) { out[i] = x[i] + bias[i % cols]; }
}

__global__ void BiasAddGradKernel(const float* dy, int64_t rows, int64_t cols,
                                  float* dbias) {
  AF_GRID_STRIDE(j, cols) {
    float sum = 0;
    for (int64_t i = 0; i < rows; ++i) sum += dy[i * cols + j];
    dbias[j] = sum;
  }
}

__global__ void ReluKernel(const float* x, float* y, int64_t n) {
  AF_GRID_STRIDE(i, n) { y[i] = x[i] > 0.0f ? x[i] : 0.0f; }
}

__global__ void ReluGradKernel(const float* dy, const float* y, float* dx,
                               int64_t n) {
  AF_GRID_STRIDE(i, n) { dx[i] = y[i] > 0.0f ? dy[i] : 0.0f; }
}

// One thread per row.
__global__ void SoftmaxRowsKernel(const float* logits, const int32_t* labels,
                                  int64_t rows, int64_t classes,
                                  double* row_loss, float* dlogits) {
  AF_GRID_STRIDE(i, rows) {
    const float* z = logits + i * classes;
    float* d = dlogits + i * classes;
    float top = z[0];
    for (int64_t j = 1; j < classes; ++j) top = z[j] > top ? z[j] : top;
    double sum = 0;
    for (int64_t j = 0; j < classes; ++j) {
      d[j] = expf(z[j] - top);
      sum += d[j];
    }
    const float inv = static_cast<float>(1.0 / sum);
    for (int64_t j = 0; j < classes; ++j) d[j] *= inv;
    const int32_t label = labels[i];
    if (label < 0 || label >= classes) {
      row_loss[i] = nan("");
      continue;
    }
    row_loss[i] = log(sum) - static_cast<double>(z[label] - top);
    d[label] -= 1.0f;
  }
}

// One thread: the rows' losses in row order (a batch holds few rows).
__global__ void SumRowsKernel(const double* row_loss, int64_t rows,
                              double* loss) {
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) total += row_loss[i];
  *loss = total;
}

__global__ void CountCorrectKernel(const float* logits, const int32_t* labels,
                                   int64_t rows, int64_t classes,
                                   unsigned long long* correct) {
  AF_GRID_STRIDE(i, rows) {
    const float* z = logits + i * classes;
    int64_t best = 0;
    for (int64_t j = 1; j < classes; ++j) {
      if (z[j] > z[best]) best = j;
    }
    if (best == labels[i]) atomicAdd(correct, 1ULL);
  }
}

__global__ void SgdKernel(SgdGrads grads, float inv_count, float mu, float step,
                          int64_t n, float* velocity, float* delta) {
  AF_GRID_STRIDE(i, n) {
    float g = grads.grad[0][i];
#pragma unroll
    for (int k = 1; k < kMaxGrads; ++k) {
      if (k < grads.count) g += grads.grad[k][i];
    }
    const float v = mu * velocity[i] + g * inv_count;
    velocity[i] = v;
    delta[i] = step * v;
  }
}

}  // namespace

void LaunchMatMul(const float* a, int64_t a_rows, int64_t a_cols,
                  bool transpose_a, const float* b, int64_t b_rows,
                  int64_t b_cols, bool transpose_b, float* out, void* stream) {
  const int64_t m = transpose_a ? a_cols : a_rows;
  const int64_t k = transpose_a ? a_rows : a_cols;
  const int64_t n = transpose_b ? b_rows : b_cols;
  if (m == 0 || n == 0) return;
  dim3 block(kTile, kTile);
  dim3 grid(static_cast<unsigned>((n + kTile - 1) / kTile),
            static_cast<unsigned>((m + kTile - 1) / kTile));
  MatMulKernel<<<grid, block, 0, AsStream(stream)>>>(
      a, a_cols, transpose_a, b, b_cols, transpose_b, out, m, k, n);
}

void LaunchBiasAdd(const float* x, const float* bias, int64_t rows,
                   int64_t cols, float* out, void* stream) {
  const int64_t n = rows * cols;
  if (n == 0) return;
  BiasAddKernel<<<GridFor(n), kThreads, 0, AsStream(stream)>>>(x, bias, cols,
                                                               out, n);
}

void LaunchBiasAddGrad(const float* dy, int64_t rows, int64_t cols,
                       float* dbias, void* stream) {
  if (cols == 0) return;
  BiasAddGradKernel<<<GridFor(cols), kThreads, 0, AsStream(stream)>>>(
      dy, rows, cols, dbias);
}

void LaunchRelu(const float* x, int64_t n, float* y, void* stream) {
  if (n == 0) return;
  ReluKernel<<<GridFor(n), kThreads, 0, AsStream(stream)>>>(x, y, n);
}

void LaunchReluGrad(const float* dy, const float* y, int64_t n, float* dx,
                    void* stream) {
  if (n == 0) return;
  ReluGradKernel<<<GridFor(n), kThreads, 0, AsStream(stream)>>>(dy, y, dx, n);
}

void LaunchSoftmaxXent(const float* logits, const int32_t* labels, int64_t rows,
                       int64_t classes, double* row_loss, double* loss,
                       float* dlogits, void* stream) {
  if (rows > 0) {
    SoftmaxRowsKernel<<<GridFor(rows), kThreads, 0, AsStream(stream)>>>(
        logits, labels, rows, classes, row_loss, dlogits);
  }
  SumRowsKernel<<<1, 1, 0, AsStream(stream)>>>(row_loss, rows, loss);
}

void LaunchCountCorrect(const float* logits, const int32_t* labels,
                        int64_t rows, int64_t classes, int64_t* correct,
                        void* stream) {
  cudaMemsetAsync(correct, 0, sizeof(int64_t), AsStream(stream));
  if (rows == 0) return;
  CountCorrectKernel<<<GridFor(rows), kThreads, 0, AsStream(stream)>>>(
      logits, labels, rows, classes,
      reinterpret_cast<unsigned long long*>(correct));
}

void LaunchSgdMomentum(const SgdGrads& grads, int64_t count, double lr,
                       double momentum, int64_t n, float* velocity,
                       float* delta, void* stream) {
  if (n == 0) return;
  if (count == 0) {
    cudaMemsetAsync(delta, 0, n * sizeof(float), AsStream(stream));
    return;
  }
  SgdKernel<<<GridFor(n), kThreads, 0, AsStream(stream)>>>(
      grads, static_cast<float>(1.0 / static_cast<double>(count)),
      static_cast<float>(momentum), static_cast<float>(-lr), n, velocity,
      delta);
}

}  // namespace actorflow::internal::nn::gpu
