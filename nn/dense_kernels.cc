// The dense arithmetic for one instruction set. BUILD.bazel compiles this
// file once per level, defining ACTORFLOW_DENSE_NS (dense_baseline,
// dense_avx2, dense_avx512) and that level's -march.
//
// Nothing here may define an inline function under a name another level's
// copy also defines (see dense_kernels.h): hence Eigen under a per-level
// name, helpers in an anonymous namespace, and no other library.
#include "nn/dense_kernels.h"

#ifndef ACTORFLOW_DENSE_NS
#error "compile with -DACTORFLOW_DENSE_NS=dense_<level>"
#endif

// Every Eigen:: in Eigen's own headers becomes this level's namespace, so
// its templates, instantiated for this level's vectors, stay this level's.
#define ACTORFLOW_EIGEN_NAME_(ns) Eigen_##ns
#define ACTORFLOW_EIGEN_NAME(ns) ACTORFLOW_EIGEN_NAME_(ns)
#define Eigen ACTORFLOW_EIGEN_NAME(ACTORFLOW_DENSE_NS)
#include <cmath>

#include "Eigen/Core"

namespace actorflow::internal::nn::ACTORFLOW_DENSE_NS {
namespace {

using RowMajor =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMajor>;
using Map = Eigen::Map<RowMajor>;

void MatMul(const float* a, int64_t a_rows, int64_t a_cols, bool transpose_a,
            const float* b, int64_t b_rows, int64_t b_cols, bool transpose_b,
            float* out) {
  const int64_t m = transpose_a ? a_cols : a_rows;
  const int64_t k = transpose_a ? a_rows : a_cols;
  const int64_t n = transpose_b ? b_rows : b_cols;
  Map c(out, m, n);
  if (m == 0 || n == 0) return;
  if (k == 0) {
    c.setZero();
    return;
  }
  ConstMap am(a, a_rows, a_cols);
  ConstMap bm(b, b_rows, b_cols);
  // Eigen's product blocks by the sizes alone, single-threaded: the same
  // sizes give the same sums in the same order wherever the buffers lie.
  if (!transpose_a && !transpose_b) {
    c.noalias() = am * bm;
  } else if (transpose_a && !transpose_b) {
    c.noalias() = am.transpose() * bm;
  } else if (!transpose_a && transpose_b) {
    c.noalias() = am * bm.transpose();
  } else {
    c.noalias() = am.transpose() * bm.transpose();
  }
}

// The elementwise loops take __restrict pointers (GCC trusts it on
// parameters only) so they vectorize without overlap checks; callers pass
// distinct buffers or the same one for in-place (handled separately).
void AddRow(const float* __restrict row, const float* __restrict bias,
            int64_t cols, float* __restrict to) {
  for (int64_t j = 0; j < cols; ++j) to[j] = row[j] + bias[j];
}

void AddRowInPlace(const float* __restrict bias, int64_t cols,
                   float* __restrict to) {
  for (int64_t j = 0; j < cols; ++j) to[j] += bias[j];
}

void BiasAdd(const float* x, const float* bias, int64_t rows, int64_t cols,
             float* out) {
  for (int64_t i = 0; i < rows; ++i) {
    if (x == out) {
      AddRowInPlace(bias, cols, out + i * cols);
    } else {
      AddRow(x + i * cols, bias, cols, out + i * cols);
    }
  }
}

// Column sums in row order: each column's sum adds the rows one after
// another, whatever the vector width (vectors run across columns).
void BiasAddGrad(const float* dy, int64_t rows, int64_t cols, float* dbias) {
  for (int64_t j = 0; j < cols; ++j) dbias[j] = 0.0f;
  for (int64_t i = 0; i < rows; ++i) AddRowInPlace(dy + i * cols, cols, dbias);
}

void Relu(const float* __restrict x, int64_t n, float* __restrict y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void ReluInPlace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void ReluAny(const float* x, int64_t n, float* y) {
  if (x == y) return ReluInPlace(y, n);
  Relu(x, n, y);
}

void ReluGrad(const float* __restrict dy, const float* __restrict y, int64_t n,
              float* __restrict dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

int64_t SoftmaxXent(const float* logits, const int32_t* labels, int64_t rows,
                    int64_t classes, double* loss, float* dlogits) {
  for (int64_t i = 0; i < rows; ++i) {
    if (labels[i] < 0 || labels[i] >= classes) return i;
  }
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t label = labels[i];
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
    // -log softmax[label] = log(sum) - (z[label] - top)
    total += std::log(sum) - static_cast<double>(z[label] - top);
    d[label] -= 1.0f;
  }
  *loss = total;
  return -1;
}

int64_t CountCorrect(const float* logits, const int32_t* labels, int64_t rows,
                     int64_t classes) {
  int64_t correct = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const float* z = logits + i * classes;
    int64_t best = 0;
    for (int64_t j = 1; j < classes; ++j) {
      if (z[j] > z[best]) best = j;
    }
    correct += best == labels[i];
  }
  return correct;
}

// One pass of the update over `Terms` gradients (0: the gradient sum is
// already in `delta`), added left to right as the general case does.
template <int Terms>
void SgdPass(const float* __restrict g0, const float* __restrict g1, int64_t n,
             float mu, float inv_count, float step, float* __restrict velocity,
             float* __restrict delta) {
  for (int64_t i = 0; i < n; ++i) {
    float g;
    if constexpr (Terms == 0) g = delta[i];
    if constexpr (Terms >= 1) g = g0[i];
    if constexpr (Terms == 2) g += g1[i];
    const float v = mu * velocity[i] + g * inv_count;
    velocity[i] = v;
    delta[i] = step * v;
  }
}

void AddInto(const float* __restrict term, int64_t n, float* __restrict sum) {
  for (int64_t i = 0; i < n; ++i) sum[i] += term[i];
}

void AddTo(const float* __restrict a, const float* __restrict b, int64_t n,
           float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

void Copy(const float* __restrict from, int64_t n, float* __restrict to) {
  for (int64_t i = 0; i < n; ++i) to[i] = from[i];
}

void SgdMomentum(const float* const* grads, int terms, float inv_count,
                 float momentum, float step, int64_t n, float* velocity,
                 float* delta) {
  if (terms == 1) {
    return SgdPass<1>(grads[0], nullptr, n, momentum, inv_count, step, velocity,
                      delta);
  }
  if (terms == 2) {
    return SgdPass<2>(grads[0], grads[1], n, momentum, inv_count, step,
                      velocity, delta);
  }
  // More terms: sum them into delta first, in list order.
  Copy(grads[0], n, delta);
  for (int k = 1; k < terms; ++k) AddInto(grads[k], n, delta);
  SgdPass<0>(nullptr, nullptr, n, momentum, inv_count, step, velocity, delta);
}

void ApplyDelta(const float* weights, const float* delta, int64_t n,
                float* out) {
  if (weights == out) return AddInto(delta, n, out);
  AddTo(weights, delta, n, out);
}

void NormalizeBytes(const uint8_t* __restrict in, int64_t n, float mean,
                    float inv_std, float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = (static_cast<float>(in[i]) - mean) * inv_std;
  }
}

}  // namespace

extern const DenseKernels kKernels = {
    MatMul,      BiasAdd,      BiasAddGrad, ReluAny,    ReluGrad,
    SoftmaxXent, CountCorrect, SgdMomentum, ApplyDelta, NormalizeBytes,
};

}  // namespace actorflow::internal::nn::ACTORFLOW_DENSE_NS
