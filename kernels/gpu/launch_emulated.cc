// The emulated device's kernels (--config=emulated_gpu): the arithmetic of
// launch.cu as host loops, run on the stream's worker thread in stream
// order. The checksum sums in sequence rather than in launch.cu's tree.
#include <chrono>

#include "kernels/gpu/launch.h"
#include "memory/cuda_emulation.h"

namespace actorflow::gpu {

void LaunchFill(float* out, int64_t n, float value, void* stream) {
  if (n == 0) return;
  cuda::emulated::Enqueue(stream, [=] {
    for (int64_t i = 0; i < n; ++i) out[i] = value;
  });
}

void LaunchScale(const float* in, float* out, int64_t n, double factor,
                 void* stream) {
  if (n == 0) return;
  cuda::emulated::Enqueue(stream, [=] {
    for (int64_t i = 0; i < n; ++i) {
      out[i] = static_cast<float>(static_cast<double>(in[i]) * factor);
    }
  });
}

void LaunchAdd(const AddInputs& inputs, float* out, int64_t n, void* stream) {
  if (n == 0) return;
  cuda::emulated::Enqueue(stream, [=] {
    for (int64_t i = 0; i < n; ++i) {
      bool have = inputs.accumulate;
      float acc = have ? out[i] : 0.0f;
      for (int k = 0; k < inputs.count; ++k) {
        acc = have ? acc + inputs.in[k][i] : inputs.in[k][i];
        have = true;
      }
      out[i] = acc;
    }
  });
}

void LaunchSum(const float* in, int64_t n, double* partials, double* total,
               bool first, void* stream) {
  cuda::emulated::Enqueue(stream, [=] {
    double sum = 0;
    for (int64_t i = 0; i < n; ++i) sum += in[i];
    partials[0] = sum;
    *total = (first ? 0.0 : *total) + sum;
  });
}

void LaunchSpin(int64_t ns, void* stream) {
  cuda::emulated::Enqueue(stream, [=] {
    auto until =
        std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
    while (std::chrono::steady_clock::now() < until) {
    }
  });
}

}  // namespace actorflow::gpu
