#ifndef ACTORFLOW_KERNELS_GPU_LAUNCH_H_
#define ACTORFLOW_KERNELS_GPU_LAUNCH_H_

#include <cstdint>

// Host functions that queue the device kernels of the built-in GPU kernels
// on a stream (a cudaStream_t as void*). Compiled by nvcc (launch.cu); the
// caller checks the launch with cuda::LastLaunchError. Fill, Scale and Add
// queue nothing for n == 0; Sum always queues, since it still sets *total.
// Pointers are device memory.
namespace actorflow::gpu {

// out[i] = value.
void LaunchFill(float* out, int64_t n, float value, void* stream);

// out[i] = float(double(in[i]) * factor): the CPU kernel's arithmetic.
void LaunchScale(const float* in, float* out, int64_t n, double factor,
                 void* stream);

// out[i] = in[0][i] + in[1][i] + ... in list order, in float, like the CPU
// kernel. With `accumulate`, out[i] itself is the first term.
constexpr int kMaxAddInputs = 8;
struct AddInputs {
  const float* in[kMaxAddInputs] = {};
  int count = 0;  // 1..kMaxAddInputs (0 allowed with accumulate)
  bool accumulate = false;
};
void LaunchAdd(const AddInputs& inputs, float* out, int64_t n, void* stream);

// *total = (first ? 0 : *total) + sum(in[0..n)), summed in double in a
// fixed order (deterministic for a given n). `partials` holds
// kSumPartials doubles of scratch.
constexpr int kSumPartials = 256;
void LaunchSum(const float* in, int64_t n, double* partials, double* total,
               bool first, void* stream);

// Busy-waits on the device for about `ns` nanoseconds: a kernel of known
// length for tests and benchmarks.
void LaunchSpin(int64_t ns, void* stream);

}  // namespace actorflow::gpu

#endif  // ACTORFLOW_KERNELS_GPU_LAUNCH_H_
