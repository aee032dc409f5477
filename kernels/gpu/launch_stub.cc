// CPU-only builds: nothing to launch. Callers check cuda::LastLaunchError,
// which the CUDA stub answers with "built without CUDA".
#include "kernels/gpu/launch.h"

namespace actorflow::internal::gpu {

void LaunchFill(void*, int64_t, int, uint64_t, void*) {}
void LaunchScale(ElemType, const void*, void*, int64_t, double, void*) {}
void LaunchAdd(ElemType, const AddInputs&, void*, int64_t, void*) {}
void LaunchCast(ElemType, ElemType, const void*, void*, int64_t, void*) {}
void LaunchNormalize(ElemType, const void*, float*, int64_t,
                     const NormalizeParams&, void*) {}
void LaunchSum(ElemType, const void*, int64_t, double*, double*, bool, void*) {}
void LaunchSpin(int64_t, void*) {}

}  // namespace actorflow::internal::gpu
