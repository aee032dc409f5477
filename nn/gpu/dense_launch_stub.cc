// CPU-only builds: nothing to launch. Callers check cuda::LastLaunchError,
// which the CUDA stub answers with "built without CUDA"; no GPU kernel is
// registered to call these, but tests that name them still link.
#include "nn/gpu/dense_launch.h"

namespace actorflow::internal::nn::gpu {

void LaunchMatMul(const float*, int64_t, int64_t, bool, const float*, int64_t,
                  int64_t, bool, float*, void*) {}
void LaunchBiasAdd(const float*, const float*, int64_t, int64_t, float*,
                   void*) {}
void LaunchBiasAddGrad(const float*, int64_t, int64_t, float*, void*) {}
void LaunchRelu(const float*, int64_t, float*, void*) {}
void LaunchReluGrad(const float*, const float*, int64_t, float*, void*) {}
void LaunchSoftmaxXent(const float*, const int32_t*, int64_t, int64_t, double*,
                       double*, float*, void*) {}
void LaunchCountCorrect(const float*, const int32_t*, int64_t, int64_t,
                        int64_t*, void*) {}
void LaunchSgdMomentum(const SgdGrads&, int64_t, double, double, int64_t,
                       float*, float*, void*) {}

}  // namespace actorflow::internal::nn::gpu
