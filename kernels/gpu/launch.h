#ifndef ACTORFLOW_KERNELS_GPU_LAUNCH_H_
#define ACTORFLOW_KERNELS_GPU_LAUNCH_H_

#include <cstdint>

// Host functions that queue the device kernels of the built-in GPU kernels
// on a stream (a cudaStream_t as void*). Compiled by nvcc (launch.cu); the
// caller checks the launch with cuda::LastLaunchError. Fill, Scale, Add and
// Cast queue nothing for n == 0; Sum always queues, since it still sets
// *total. Pointers are device memory; n counts elements.
namespace actorflow::internal::gpu {

// Element types, numbered as DataType (actorflow/data_type.h;
// gpu_kernels.cc checks that they agree): nvcc compiles launch.cu alone,
// as C++17 with no include path beyond the workspace, so it cannot take
// data_type.h, which includes Abseil.
enum ElemType : int {
  kFloat32 = 0,
  kFloat64 = 1,
  kInt8 = 2,
  kUInt8 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kBool = 6,
};

// n elements of `elem_size` bytes (1, 2, 4 or 8), each the low bytes of
// `pattern`.
void LaunchFill(void* out, int64_t n, int elem_size, uint64_t pattern,
                void* stream);

// out[i] = T(double(in[i]) * factor) for T float32 or float64: the CPU
// kernel's arithmetic.
void LaunchScale(ElemType type, const void* in, void* out, int64_t n,
                 double factor, void* stream);

// out[i] = in[0][i] + in[1][i] + ... in list order, in T (float32 or
// float64), like the CPU kernel. With `accumulate`, out[i] itself is the
// first term.
constexpr int kMaxAddInputs = 8;
struct AddInputs {
  const void* in[kMaxAddInputs] = {};
  int count = 0;  // 1..kMaxAddInputs (0 allowed with accumulate)
  bool accumulate = false;
};
void LaunchAdd(ElemType type, const AddInputs& inputs, void* out, int64_t n,
               void* stream);

// out[i] = ConvertElement<To>(in[i]) (kernels/convert.h).
void LaunchCast(ElemType from, ElemType to, const void* in, void* out,
                int64_t n, void* stream);

// out[i] = (float(in[i]) - mean[c]) * inv_std[c] with c = (i / inner) %
// channels: the `normalize` kernel's arithmetic, in float32.
constexpr int kMaxNormalizeChannels = 16;
struct NormalizeParams {
  float mean[kMaxNormalizeChannels] = {};
  float inv_std[kMaxNormalizeChannels] = {};
  int64_t channels = 1;
  int64_t inner = 1;
};
void LaunchNormalize(ElemType from, const void* in, float* out, int64_t n,
                     const NormalizeParams& params, void* stream);
// *total = (first ? 0 : *total) + sum(in[0..n)), each element converted to
// double and summed in double in a fixed order (deterministic for a given
// n). `partials` holds kSumPartials doubles of scratch.
constexpr int kSumPartials = 256;
void LaunchSum(ElemType type, const void* in, int64_t n, double* partials,
               double* total, bool first, void* stream);

// Busy-waits on the device for about `ns` nanoseconds: a kernel of known
// length for tests and benchmarks.
void LaunchSpin(int64_t ns, void* stream);

}  // namespace actorflow::internal::gpu

#endif  // ACTORFLOW_KERNELS_GPU_LAUNCH_H_
