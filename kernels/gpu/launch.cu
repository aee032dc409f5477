// Device code of the built-in GPU kernels (see launch.h). Compiled by nvcc
// in a genrule; the host side of each kernel is in gpu_kernels.cc.
#include <cuda_runtime.h>

#include <cstring>

#include "kernels/convert.h"
#include "kernels/gpu/elem_visit.h"
#include "kernels/gpu/launch.h"

namespace actorflow::internal::gpu {
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

template <typename T>
__global__ void FillKernel(T* out, int64_t n, T value) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = value;
  }
}

template <typename T>
__global__ void ScaleKernel(const T* in, T* out, int64_t n, double factor) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = static_cast<T>(static_cast<double>(in[i]) * factor);
  }
}

template <typename T>
__global__ void AddKernel(AddInputs inputs, T* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    // The first term is copied, not added to zero (0 + -0 is +0), as the
    // CPU kernel does; unrolled so the pointers stay in registers.
    bool have = inputs.accumulate;
    T acc = have ? out[i] : T(0);
#pragma unroll
    for (int k = 0; k < kMaxAddInputs; ++k) {
      if (k < inputs.count) {
        T term = static_cast<const T*>(inputs.in[k])[i];
        acc = have ? acc + term : term;
        have = true;
      }
    }
    out[i] = acc;
  }
}

template <typename To, typename From>
__global__ void CastKernel(const From* in, To* out, int64_t n) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    out[i] = ConvertElement<To>(in[i]);
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

template <typename T>
__global__ void PartialSumKernel(const T* in, int64_t n, double* partials) {
  double sum = 0;
  for (int64_t i = blockIdx.x * int64_t{kThreads} + threadIdx.x; i < n;
       i += int64_t{kSumPartials} * kThreads) {
    sum += static_cast<double>(in[i]);
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

void LaunchFill(void* out, int64_t n, int elem_size, uint64_t pattern,
                void* stream) {
  if (n == 0) return;
  auto fill = [&](auto type_tag) {
    using T = decltype(type_tag);
    T value;
    static_assert(sizeof(T) <= sizeof(pattern));
    memcpy(&value, &pattern, sizeof(T));
    FillKernel<T><<<GridFor(n), kThreads, 0, AsStream(stream)>>>(
        static_cast<T*>(out), n, value);
  };
  switch (elem_size) {
    case 1:
      return fill(uint8_t{});
    case 2:
      return fill(uint16_t{});
    case 4:
      return fill(uint32_t{});
    default:
      return fill(uint64_t{});
  }
}

void LaunchScale(ElemType type, const void* in, void* out, int64_t n,
                 double factor, void* stream) {
  if (n == 0) return;
  if (type == kFloat64) {
    ScaleKernel<double><<<GridFor(n), kThreads, 0, AsStream(stream)>>>(
        static_cast<const double*>(in), static_cast<double*>(out), n, factor);
  } else {
    ScaleKernel<float><<<GridFor(n), kThreads, 0, AsStream(stream)>>>(
        static_cast<const float*>(in), static_cast<float*>(out), n, factor);
  }
}

void LaunchAdd(ElemType type, const AddInputs& inputs, void* out, int64_t n,
               void* stream) {
  if (n == 0) return;
  if (type == kFloat64) {
    AddKernel<double><<<GridFor(n), kThreads, 0, AsStream(stream)>>>(
        inputs, static_cast<double*>(out), n);
  } else {
    AddKernel<float><<<GridFor(n), kThreads, 0, AsStream(stream)>>>(
        inputs, static_cast<float*>(out), n);
  }
}

void LaunchCast(ElemType from, ElemType to, const void* in, void* out,
                int64_t n, void* stream) {
  if (n == 0) return;
  VisitElemType(from, [&](auto from_tag) {
    using From = decltype(from_tag);
    VisitElemType(to, [&](auto to_tag) {
      using To = decltype(to_tag);
      CastKernel<To, From><<<GridFor(n), kThreads, 0, AsStream(stream)>>>(
          static_cast<const From*>(in), static_cast<To*>(out), n);
    });
  });
}

template <typename From>
__global__ void NormalizeKernel(const From* in, float* out, int64_t n,
                                NormalizeParams params) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t c = (i / params.inner) % params.channels;
    out[i] = (static_cast<float>(in[i]) - params.mean[c]) * params.inv_std[c];
  }
}

void LaunchNormalize(ElemType from, const void* in, float* out, int64_t n,
                     const NormalizeParams& params, void* stream) {
  if (n == 0) return;
  VisitElemType(from, [&](auto from_tag) {
    using From = decltype(from_tag);
    NormalizeKernel<From><<<GridFor(n), kThreads, 0, AsStream(stream)>>>(
        static_cast<const From*>(in), out, n, params);
  });
}

void LaunchSum(ElemType type, const void* in, int64_t n, double* partials,
               double* total, bool first, void* stream) {
  // Every partial is written (zero for blocks past the end), so the second
  // kernel never reads stale scratch.
  VisitElemType(type, [&](auto tag) {
    using T = decltype(tag);
    PartialSumKernel<T><<<kSumPartials, kThreads, 0, AsStream(stream)>>>(
        static_cast<const T*>(in), n, partials);
  });
  TotalKernel<<<1, kThreads, 0, AsStream(stream)>>>(partials, total, first);
}

void LaunchSpin(int64_t ns, void* stream) {
  SpinKernel<<<1, 1, 0, AsStream(stream)>>>(ns);
}

}  // namespace actorflow::internal::gpu
