#include "nn/dense_math.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "Eigen/Core"
#include "absl/strings/str_cat.h"

namespace actorflow::nn {
namespace {

using RowMajor =
    Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using ConstMap = Eigen::Map<const RowMajor>;
using Map = Eigen::Map<RowMajor>;

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

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

void BiasAdd(const float* x, const float* bias, int64_t rows, int64_t cols,
             float* out) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = x + i * cols;
    float* to = out + i * cols;
    for (int64_t j = 0; j < cols; ++j) to[j] = row[j] + bias[j];
  }
}

void BiasAddGrad(const float* dy, int64_t rows, int64_t cols, float* dbias) {
  std::fill(dbias, dbias + cols, 0.0f);
  for (int64_t i = 0; i < rows; ++i) {
    const float* row = dy + i * cols;
    for (int64_t j = 0; j < cols; ++j) dbias[j] += row[j];
  }
}

void Relu(const float* __restrict x, int64_t n, float* __restrict y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void ReluGrad(const float* __restrict dy, const float* __restrict y, int64_t n,
              float* __restrict dx) {
  for (int64_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dy[i] : 0.0f;
}

absl::Status SoftmaxCrossEntropy(const float* logits, const int32_t* labels,
                                 int64_t rows, int64_t classes, double* loss,
                                 float* dlogits) {
  double total = 0;
  for (int64_t i = 0; i < rows; ++i) {
    const int32_t label = labels[i];
    if (label < 0 || label >= classes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "label ", label, " of row ", i, " is outside [0, ", classes, ")"));
    }
    const float* z = logits + i * classes;
    float* d = dlogits + i * classes;
    float top = z[0];
    for (int64_t j = 1; j < classes; ++j) top = std::max(top, z[j]);
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
  return absl::OkStatus();
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

namespace {

// One pass of the update over `Terms` gradients (0: the gradient sum is
// already in `delta`), added left to right as the general case does. GCC
// trusts __restrict on parameters only: that is what lets these loops
// vectorize without overlap checks.
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

}  // namespace

void SgdMomentum(const std::vector<const float*>& grads, int64_t count,
                 double lr, double momentum, int64_t n, float* velocity,
                 float* delta) {
  if (count == 0) {
    std::fill(delta, delta + n, 0.0f);
    return;
  }
  const float inv_count = static_cast<float>(1.0 / static_cast<double>(count));
  const float mu = static_cast<float>(momentum);
  const float step = static_cast<float>(-lr);
  if (grads.size() == 1) {
    return SgdPass<1>(grads[0], nullptr, n, mu, inv_count, step, velocity,
                      delta);
  }
  if (grads.size() == 2) {
    return SgdPass<2>(grads[0], grads[1], n, mu, inv_count, step, velocity,
                      delta);
  }
  // More terms: sum them into delta first, in list order.
  std::copy(grads[0], grads[0] + n, delta);
  for (size_t k = 1; k < grads.size(); ++k) AddInto(grads[k], n, delta);
  SgdPass<0>(nullptr, nullptr, n, mu, inv_count, step, velocity, delta);
}

double ScheduledRate(double lr, double decay, int64_t decay_steps,
                     int64_t step) {
  if (decay_steps <= 0) return lr;
  for (int64_t k = step / decay_steps; k > 0; --k) lr *= decay;
  return lr;
}

void ApplyDelta(const float* weights, const float* delta, int64_t n,
                float* out) {
  // Different registers never overlap, so out is weights or apart from it.
  if (weights == out) return AddInto(delta, n, out);
  AddTo(weights, delta, n, out);
}

absl::Status InitWeights(const std::string& init, double scale, uint64_t seed,
                         int64_t n, float* out) {
  if (init == "zeros") {
    std::fill(out, out + n, 0.0f);
    return absl::OkStatus();
  }
  if (init == "uniform") {
    const uint64_t key = SplitMix(seed);
    for (int64_t i = 0; i < n; ++i) {
      // 24 random bits: a float in [0, 1) exactly.
      const uint64_t bits = SplitMix(key + static_cast<uint64_t>(i)) >> 40;
      const double unit = static_cast<double>(bits) / 16777216.0;
      out[i] = static_cast<float>((2.0 * unit - 1.0) * scale);
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("init '", init, "' (zeros or uniform)"));
}

}  // namespace actorflow::nn
