#include "nn/dense_math.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "nn/cpu_isa.h"
#include "nn/dense_kernels.h"

namespace actorflow::internal::nn {
namespace {

uint64_t SplitMix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

const DenseKernels& TableFor(Isa isa) {
#ifdef ACTORFLOW_DENSE_MULTI_ISA
  if (isa == Isa::kAvx512) return dense_avx512::kKernels;
  if (isa == Isa::kAvx2) return dense_avx2::kKernels;
#endif
  (void)isa;
  return dense_baseline::kKernels;
}

struct Selection {
  Isa isa;
  const DenseKernels* kernels;
};

// Chosen once per process, so every kernel and the reference trainer
// compute with the same code. A bad $ACTORFLOW_ISA cannot be returned from
// here: it is reported once on stderr and the best level is used
// (DenseIsa() lets a program refuse it instead).
const Selection& Selected() {
  static const Selection selection = [] {
    auto isa = IsaFromEnvironment();
    if (!isa.ok()) {
      std::fprintf(stderr, "actorflow: %s; using %s\n",
                   std::string(isa.status().message()).c_str(),
                   IsaName(BestSupportedIsa()));
      isa = BestSupportedIsa();
    }
    return Selection{*isa, &TableFor(*isa)};
  }();
  return selection;
}

const DenseKernels& Kernels() { return *Selected().kernels; }

}  // namespace

Isa DenseIsa() { return Selected().isa; }

const DenseKernels& DenseKernelsFor(Isa isa) { return TableFor(isa); }

void MatMul(const float* a, int64_t a_rows, int64_t a_cols, bool transpose_a,
            const float* b, int64_t b_rows, int64_t b_cols, bool transpose_b,
            float* out) {
  Kernels().mat_mul(a, a_rows, a_cols, transpose_a, b, b_rows, b_cols,
                    transpose_b, out);
}

void BiasAdd(const float* x, const float* bias, int64_t rows, int64_t cols,
             float* out) {
  Kernels().bias_add(x, bias, rows, cols, out);
}

void BiasAddGrad(const float* dy, int64_t rows, int64_t cols, float* dbias) {
  Kernels().bias_add_grad(dy, rows, cols, dbias);
}

void Relu(const float* x, int64_t n, float* y) { Kernels().relu(x, n, y); }

void ReluGrad(const float* dy, const float* y, int64_t n, float* dx) {
  Kernels().relu_grad(dy, y, n, dx);
}

absl::Status SoftmaxCrossEntropy(const float* logits, const int32_t* labels,
                                 int64_t rows, int64_t classes, double* loss,
                                 float* dlogits) {
  const int64_t bad =
      Kernels().softmax_xent(logits, labels, rows, classes, loss, dlogits);
  if (bad < 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("label ", labels[bad], " of row ", bad, " is outside [0, ",
                   classes, ")"));
}

int64_t CountCorrect(const float* logits, const int32_t* labels, int64_t rows,
                     int64_t classes) {
  return Kernels().count_correct(logits, labels, rows, classes);
}

void SgdMomentum(const std::vector<const float*>& grads, int64_t count,
                 double lr, double momentum, int64_t n, float* velocity,
                 float* delta) {
  if (count == 0 || grads.empty()) {
    std::fill(delta, delta + n, 0.0f);
    return;
  }
  const float inv_count = static_cast<float>(1.0 / static_cast<double>(count));
  Kernels().sgd_momentum(grads.data(), static_cast<int>(grads.size()),
                         inv_count, static_cast<float>(momentum),
                         static_cast<float>(-lr), n, velocity, delta);
}

double ScheduledRate(double lr, double decay, int64_t decay_steps,
                     int64_t step) {
  if (decay_steps <= 0) return lr;
  for (int64_t k = step / decay_steps; k > 0; --k) lr *= decay;
  return lr;
}

void ApplyDelta(const float* weights, const float* delta, int64_t n,
                float* out) {
  Kernels().apply_delta(weights, delta, n, out);
}

void NormalizeBytes(const uint8_t* in, int64_t n, float mean, float inv_std,
                    float* out) {
  Kernels().normalize_bytes(in, n, mean, inv_std, out);
}

void AddInOrder(const std::vector<const float*>& terms, int64_t n, float* out) {
  if (terms.empty()) return;
  std::copy(terms[0], terms[0] + n, out);
  for (size_t k = 1; k < terms.size(); ++k) {
    Kernels().apply_delta(out, terms[k], n, out);
  }
}

namespace {

// Element i of InitWeights("uniform", scale, seed, ...): each element is its
// own draw, so any window of the array can be made without the rest.
float UniformElement(uint64_t key, double scale, int64_t i) {
  // 24 random bits: a float in [0, 1) exactly.
  const uint64_t bits = SplitMix(key + static_cast<uint64_t>(i)) >> 40;
  const double unit = static_cast<double>(bits) / 16777216.0;
  return static_cast<float>((2.0 * unit - 1.0) * scale);
}

}  // namespace

absl::Status InitWeights(const std::string& init, double scale, uint64_t seed,
                         int64_t n, float* out) {
  if (init == "zeros") {
    std::fill(out, out + n, 0.0f);
    return absl::OkStatus();
  }
  if (init == "uniform") {
    const uint64_t key = SplitMix(seed);
    for (int64_t i = 0; i < n; ++i) out[i] = UniformElement(key, scale, i);
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat("init '", init, "' (zeros or uniform)"));
}

absl::Status InitWeightsWindow(const std::string& init, double scale,
                               uint64_t seed,
                               const std::vector<int64_t>& full_shape,
                               const std::vector<int64_t>& offset,
                               const std::vector<int64_t>& shape, float* out) {
  const size_t rank = full_shape.size();
  if (offset.size() != rank || shape.size() != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a window of rank ", shape.size(), " at an offset of rank ",
        offset.size(), " in an array of rank ", rank));
  }
  int64_t total = 1, count = 1;
  for (size_t d = 0; d < rank; ++d) {
    if (offset[d] < 0 || shape[d] < 0 || offset[d] + shape[d] > full_shape[d]) {
      return absl::InvalidArgumentError(
          absl::StrCat("dimension ", d, ": a window of ", shape[d], " at ",
                       offset[d], " leaves the array's ", full_shape[d]));
    }
    if (full_shape[d] > 0 && total > (int64_t{1} << 62) / full_shape[d]) {
      return absl::InvalidArgumentError(
          "the array has more than 2^62 elements");
    }
    total *= full_shape[d];
    count *= shape[d];
  }
  if (init != "uniform" || count == 0) {
    return InitWeights(init, scale, seed, count, out);
  }
  const uint64_t key = SplitMix(seed);
  std::vector<int64_t> index(rank, 0);
  for (int64_t i = 0; i < count; ++i) {
    int64_t flat = 0;
    for (size_t d = 0; d < rank; ++d) {
      flat = flat * full_shape[d] + offset[d] + index[d];
    }
    out[i] = UniformElement(key, scale, flat);
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < shape[d]) break;
      index[d] = 0;
    }
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::nn
