// A unit test of the affine kernel (affine_kernel.cc) with KernelHarness,
// as a kernel library's own tests would run it: built against the SDK,
// with the kernel's source compiled in, linked with libactorflow.so.
//
//   make -C examples/plugin ACTORFLOW_SDK=/tmp/sdk test
//
// Prints "affine_kernel_test: ok" and exits 0, or names the first
// difference and exits 1.
#include <cstdio>
#include <memory>

#include <actorflow/kernel_harness.h>

namespace {

int Fail(const char* what) {
  std::fprintf(stderr, "affine_kernel_test: %s\n", what);
  return 1;
}

}  // namespace

int main() {
  actorflow::TaskProto task;
  task.set_name("affine");
  task.mutable_kernel()->set_op_type("affine");
  (*task.mutable_kernel()->mutable_attr())["scale"].set_f(3);
  (*task.mutable_kernel()->mutable_attr())["shift"].set_f(-1);
  // One input and one output of 4 floats.
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
  (*task.mutable_kernel()->mutable_attr())["scale"].set_s("three");
  auto refused = actorflow::KernelHarness::Create(task, 1, true, 4);
  if (refused.ok()) return Fail("a string scale was accepted");
  std::printf("affine_kernel_test: ok\n");
  return 0;
}
