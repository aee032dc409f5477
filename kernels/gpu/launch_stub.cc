// CPU-only builds: nothing to launch. Callers check cuda::LastLaunchError,
// which the CUDA stub answers with "built without CUDA".
#include "kernels/gpu/launch.h"

namespace actorflow::gpu {

void LaunchFill(float*, int64_t, float, void*) {}
void LaunchScale(const float*, float*, int64_t, double, void*) {}
void LaunchAdd(const AddInputs&, float*, int64_t, void*) {}
void LaunchSum(const float*, int64_t, double*, double*, bool, void*) {}
void LaunchSpin(int64_t, void*) {}

}  // namespace actorflow::gpu
