#ifndef ACTORFLOW_TESTS_GPU_TEST_UTIL_H_
#define ACTORFLOW_TESTS_GPU_TEST_UTIL_H_

#include <cstdio>
#include <string>

#include "actorflow/cuda_api.h"

namespace actorflow::internal::testing {

// True when CUDA device 0 is usable. Otherwise prints
// "SKIPPED: <test>: <reason>" (which .ci/run counts as skipped) and returns
// false, and the caller returns without asserting anything.
inline bool GpuOrSkip(const char* test) {
  absl::Status status = cuda::DeviceAvailable(0);
  if (status.ok()) return true;
  std::printf("SKIPPED: %s: %s\n", test, std::string(status.message()).c_str());
  return false;
}

}  // namespace actorflow::internal::testing

#endif  // ACTORFLOW_TESTS_GPU_TEST_UTIL_H_
