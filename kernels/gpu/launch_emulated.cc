// The emulated device's kernels (--config=emulated_gpu): the arithmetic of
// launch.cu as host loops, run on the stream's worker thread in stream
// order. The checksum sums in sequence rather than in launch.cu's tree.
#include <chrono>
#include <cstring>

#include "kernels/convert.h"
#include "kernels/gpu/elem_visit.h"
#include "kernels/gpu/launch.h"
#include "memory/cuda_emulation.h"

namespace actorflow::internal::gpu {

void LaunchFill(void* out, int64_t n, int elem_size, uint64_t pattern,
                void* stream) {
  if (n == 0) return;
  cuda::emulated::Enqueue(stream, [=] {
    char* bytes = static_cast<char*>(out);
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(bytes + i * elem_size, &pattern, elem_size);
    }
  });
}

void LaunchScale(ElemType type, const void* in, void* out, int64_t n,
                 double factor, void* stream) {
  if (n == 0) return;
  cuda::emulated::Enqueue(stream, [=] {
    auto scale = [&](auto tag) {
      using T = decltype(tag);
      const T* from = static_cast<const T*>(in);
      T* to = static_cast<T*>(out);
      for (int64_t i = 0; i < n; ++i) {
        to[i] = static_cast<T>(static_cast<double>(from[i]) * factor);
      }
    };
    type == kFloat64 ? scale(double{}) : scale(float{});
  });
}

void LaunchAdd(ElemType type, const AddInputs& inputs, void* out, int64_t n,
               void* stream) {
  if (n == 0) return;
  cuda::emulated::Enqueue(stream, [=] {
    auto add = [&](auto tag) {
      using T = decltype(tag);
      T* to = static_cast<T*>(out);
      for (int64_t i = 0; i < n; ++i) {
        bool have = inputs.accumulate;
        T acc = have ? to[i] : T(0);
        for (int k = 0; k < inputs.count; ++k) {
          T term = static_cast<const T*>(inputs.in[k])[i];
          acc = have ? acc + term : term;
          have = true;
        }
        to[i] = acc;
      }
    };
    type == kFloat64 ? add(double{}) : add(float{});
  });
}

void LaunchCast(ElemType from, ElemType to, const void* in, void* out,
                int64_t n, void* stream) {
  if (n == 0) return;
  cuda::emulated::Enqueue(stream, [=] {
    VisitElemType(from, [&](auto from_tag) {
      using From = decltype(from_tag);
      VisitElemType(to, [&](auto to_tag) {
        using To = decltype(to_tag);
        for (int64_t i = 0; i < n; ++i) {
          static_cast<To*>(out)[i] =
              ConvertElement<To>(static_cast<const From*>(in)[i]);
        }
      });
    });
  });
}

void LaunchNormalize(ElemType from, const void* in, float* out, int64_t n,
                     const NormalizeParams& params, void* stream) {
  if (n == 0) return;
  cuda::emulated::Enqueue(stream, [=] {
    VisitElemType(from, [&](auto from_tag) {
      using From = decltype(from_tag);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t c = (i / params.inner) % params.channels;
        out[i] = (static_cast<float>(static_cast<const From*>(in)[i]) -
                  params.mean[c]) *
                 params.inv_std[c];
      }
    });
  });
}

void LaunchSum(ElemType type, const void* in, int64_t n, double* partials,
               double* total, bool first, void* stream) {
  cuda::emulated::Enqueue(stream, [=] {
    double sum = 0;
    VisitElemType(type, [&](auto tag) {
      using T = decltype(tag);
      for (int64_t i = 0; i < n; ++i) {
        sum += static_cast<double>(static_cast<const T*>(in)[i]);
      }
    });
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

}  // namespace actorflow::internal::gpu
