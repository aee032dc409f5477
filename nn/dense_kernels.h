#ifndef ACTORFLOW_NN_DENSE_KERNELS_H_
#define ACTORFLOW_NN_DENSE_KERNELS_H_

#include <cstdint>

// The vector arithmetic behind dense_math.h, as one table of functions per
// instruction set. dense_kernels.cc is compiled once per level, each time
// with its own -march and namespace; dense_math.cc picks the table once.
//
// This header is included by those per-level compiles, so it includes
// nothing with inline functions: an inline function compiled for AVX-512 in
// one object and for SSE2 in another is one symbol to the linker, which may
// keep the AVX-512 copy for everyone. (Eigen, the one library they use, is
// renamed per level there; tests/dense_isa_symbols_test.sh checks that those
// objects define no shared symbol but their own.)
namespace actorflow::internal::nn {

struct DenseKernels {
  void (*mat_mul)(const float* a, int64_t a_rows, int64_t a_cols,
                  bool transpose_a, const float* b, int64_t b_rows,
                  int64_t b_cols, bool transpose_b, float* out);
  void (*bias_add)(const float* x, const float* bias, int64_t rows,
                   int64_t cols, float* out);
  void (*bias_add_grad)(const float* dy, int64_t rows, int64_t cols,
                        float* dbias);
  void (*relu)(const float* x, int64_t n, float* y);
  void (*relu_grad)(const float* dy, const float* y, int64_t n, float* dx);
  // Returns the first row whose label lies outside [0, classes), or -1
  // after writing the loss sum and dlogits.
  int64_t (*softmax_xent)(const float* logits, const int32_t* labels,
                          int64_t rows, int64_t classes, double* loss,
                          float* dlogits);
  int64_t (*count_correct)(const float* logits, const int32_t* labels,
                           int64_t rows, int64_t classes);
  // The update of dense_math.h's SgdMomentum for count > 0, over `terms`
  // gradients.
  void (*sgd_momentum)(const float* const* grads, int terms, float inv_count,
                       float momentum, float step, int64_t n, float* velocity,
                       float* delta);
  // out = weights + delta; out is weights or apart from it.
  void (*apply_delta)(const float* weights, const float* delta, int64_t n,
                      float* out);
  // out[i] = (float(in[i]) - mean) * inv_std.
  void (*normalize_bytes)(const uint8_t* in, int64_t n, float mean,
                          float inv_std, float* out);
};

// One table per level this build compiled (cpu_isa.h).
namespace dense_baseline {
extern const DenseKernels kKernels;
}
namespace dense_avx2 {
extern const DenseKernels kKernels;
}
namespace dense_avx512 {
extern const DenseKernels kKernels;
}

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_DENSE_KERNELS_H_
