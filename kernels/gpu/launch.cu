// Device code of the built-in GPU kernels (see launch.h). Compiled by nvcc
// in a genrule; the host side of each kernel is in gpu_kernels.cc.
#include <cuda_runtime.h>

#include "kernels/gpu/launch.h"

namespace actorflow::gpu {
namespace {

constexpr int kThreads = 256;

// Enough blocks to fill a large GPU, few enough that each thread does
// several elements through the grid-stride loop.
unsigned GridFor(int64_t n) {
  int64_t blocks = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? blocks : 4096);
}

cudaStream_t AsStream(void* stream) {
  return static_cast<cudaStream_t>(stream);
}

__global__ void FillKernel(float* out, int64_t n, float value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = value;
  }
}

__global__ void ScaleKernel(const float* in, float* out, int64_t n,
                            double factor) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = static_cast<float>(static_cast<double>(in[i]) * factor);
  }
}

__global__ void AddKernel(AddInputs inputs, float* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    // The first term is copied, not added to zero (0 + -0 is +0), as the
    // CPU kernel does; unrolled so the pointers stay in registers.
    bool have = inputs.accumulate;
    float acc = have ? out[i] : 0.0f;
#pragma unroll
    for (int k = 0; k < kMaxAddInputs; ++k) {
      if (k < inputs.count) {
        float term = inputs.in[k][i];
        acc = have ? acc + term : term;
        have = true;
      }
    }
    out[i] = acc;
  }
}

// Sums a block's doubles in shared memory; thread 0 gets the total. Fixed
// pairing, so the result does not depend on timing.
__device__ double BlockSum(double value) {
  __shared__ double shared[kThreads];
  shared[threadIdx.x] = value;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      shared[threadIdx.x] += shared[threadIdx.x + stride];
    __syncthreads();
  }
  return shared[0];
}

__global__ void PartialSumKernel(const float* in, int64_t n, double* partials) {
  double sum = 0;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n;
       i += int64_t{kSumPartials} * kThreads) {
    sum += in[i];
  }
  double block = BlockSum(sum);
  if (threadIdx.x == 0) partials[blockIdx.x] = block;
}

__global__ void TotalKernel(const double* partials, double* total, bool first) {
  static_assert(kSumPartials == kThreads, "one partial per thread");
  double sum = BlockSum(partials[threadIdx.x]);
  if (threadIdx.x == 0) *total = (first ? 0.0 : *total) + sum;
}

__global__ void SpinKernel(int64_t ns) {
  unsigned long long start;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  unsigned long long now = start;
  while (now - start < static_cast<unsigned long long>(ns)) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
  }
}

}  // namespace

void LaunchFill(float* out, int64_t n, float value, void* stream) {
  if (n == 0) return;
  FillKernel<<<GridFor(n), kThreads, 0, AsStream(stream)>>>(out, n, value);
}

void LaunchScale(const float* in, float* out, int64_t n, double factor,
                 void* stream) {
  if (n == 0) return;
  ScaleKernel<<<GridFor(n), kThreads, 0, AsStream(stream)>>>(in, out, n,
                                                             factor);
}

void LaunchAdd(const AddInputs& inputs, float* out, int64_t n, void* stream) {
  if (n == 0) return;
  AddKernel<<<GridFor(n), kThreads, 0, AsStream(stream)>>>(inputs, out, n);
}

void LaunchSum(const float* in, int64_t n, double* partials, double* total,
               bool first, void* stream) {
  // Every partial is written (zero for blocks past the end), so the second
  // kernel never reads stale scratch.
  PartialSumKernel<<<kSumPartials, kThreads, 0, AsStream(stream)>>>(in, n,
                                                                    partials);
  TotalKernel<<<1, kThreads, 0, AsStream(stream)>>>(partials, total, first);
}

void LaunchSpin(int64_t ns, void* stream) {
  SpinKernel<<<1, 1, 0, AsStream(stream)>>>(ns);
}

}  // namespace actorflow::gpu
