// Kernel libraries through the C++ API: SessionOptions::kernel_libraries
// and LoadKernelLibrary, with the example library (examples/plugin) built
// by its Makefile against the SDK. tests/plugin_test.sh covers the command
// line and each way a library is refused.
#include "actor/kernel_library.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "actor/kernel.h"
#include "kernels/builtin_kernels.h"
#include "plan/plan_builder.h"
#include "runtime/session.h"

namespace actorflow {
namespace {

constexpr char kLibrary[] = "examples/plugin/libaffine_kernels.so";

// source -> affine (2x + 1) -> checksum: piece p holds 4 elements of p.
Plan AffinePlan() {
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef affine{.name = "affine", .op_type = "affine", .inputs = {"src"}};
  affine.attrs["scale"] = FloatAttr(2);
  affine.attrs["shift"] = FloatAttr(1);
  affine.stream_index = 1;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"affine"}};
  sink.has_output = false;
  absl::StatusOr<Plan> plan = BuildPlan({src, affine, sink}, 10);
  REQUIRE(plan.ok());
  return *plan;
}

TEST_CASE("a missing library fails Session::Create, naming it") {
  SessionOptions options;
  options.kernel_libraries = {"/nonexistent/libmissing.so"};
  auto session = Session::Create(AffinePlan(), std::move(options));
  REQUIRE_FALSE(session.ok());
  CHECK(session.status().code() == absl::StatusCode::kNotFound);
  CHECK_THAT(std::string(session.status().message()),
             Catch::Contains("'/nonexistent/libmissing.so' cannot be loaded"));
}

TEST_CASE("SessionOptions::kernel_libraries runs the library's op_type") {
  SessionOptions options;
  options.kernel_libraries = {kLibrary};
  auto session = Session::Create(AffinePlan(), std::move(options));
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  REQUIRE((*session)->Run(10).ok());
  // 4 elements of 2p + 1 over pieces 0..9.
  CHECK((*session)->Sinks().at("sink").checksum == 4 * (2 * 45 + 10));

  // Loaded once per process, from any number of threads at once.
  std::vector<std::thread> loaders;
  std::vector<absl::Status> statuses(4);
  for (int i = 0; i < 4; ++i) {
    loaders.emplace_back([&, i] { statuses[i] = LoadKernelLibrary(kLibrary); });
  }
  for (std::thread& loader : loaders) loader.join();
  for (const absl::Status& status : statuses) CHECK(status.ok());
  const std::vector<LoadedKernelLibrary> loaded = LoadedKernelLibraries();
  REQUIRE(loaded.size() == 1);
  CHECK(loaded[0].kernels == std::vector<std::string>{"affine (cpu)"});
}

// The macro's name from before the ACTORFLOW_ prefix still registers.
class Passthrough final : public Kernel {
 public:
  absl::Status Forward(KernelContext*) override { return absl::OkStatus(); }
};
REGISTER_KERNEL("kernel_library_test.unprefixed", Passthrough);

TEST_CASE("REGISTER_KERNEL, the unprefixed name, still registers") {
  CHECK(KernelRegistry::Get().Has("kernel_library_test.unprefixed"));
}

}  // namespace
}  // namespace actorflow
