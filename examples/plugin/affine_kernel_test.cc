// A unit test of the affine kernel (affine_kernel.cc) with KernelHarness,
// as a kernel library's own tests would run it: built against the SDK,
// with the kernel's source compiled in, linked with libactorflow.so.
//
//   make -C examples/plugin ACTORFLOW_SDK=/tmp/sdk test
//
// Prints "affine_kernel_test: ok" and exits 0, or names the first
// difference and exits 1.
#include <actorflow/kernel_harness.h>

#include <cstdio>
#include <memory>

namespace {

int Fail(const char* what) {
  std::fprintf(stderr, "affine_kernel_test: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  // The task as a plan file spells it; one input and one output of 4
  // floats.
  const char* task = R"pb(
    name: "affine"
    kernel {
      op_type: "affine"
      attr {
        key: "scale"
        value { f: 3 }
      }
      attr {
        key: "shift"
        value { f: -1 }
      }
    }
  )pb";
  auto harness = actorflow::KernelHarness::Create(task, 1, true, 4);
  if (!harness.ok()) {
    std::fprintf(stderr, "affine_kernel_test: %s\n",
                 harness.status().ToString().c_str());
    return 1;
  }
  float* in = (*harness)->input_floats(0);
  for (int i = 0; i < 4; ++i) in[i] = static_cast<float>(i);
  if (!(*harness)->Run(/*piece_id=*/0).ok()) return Fail("Run failed");
  const float* out = (*harness)->output_floats();
  for (int i = 0; i < 4; ++i) {
    if (out[i] != 3.0f * i - 1.0f) return Fail("out != 3 * in - 1");
  }
  // A wrongly typed attribute is refused at Create, naming it.
  auto refused = actorflow::KernelHarness::Create(
      R"pb(name: "affine"
           kernel {
             op_type: "affine"
             attr {
               key: "scale"
               value { s: "three" }
             }
           })pb",
      1, true, 4);
  if (refused.ok()) return Fail("a string scale was accepted");
  // So is a task that is not a task.
  auto garbled = actorflow::KernelHarness::Create("name: affine", 1, true, 4);
  if (garbled.ok()) return Fail("a garbled task was accepted");
  std::printf("affine_kernel_test: ok\n");
  return 0;
}
