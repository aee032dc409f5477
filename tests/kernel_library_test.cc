// Kernel libraries through the C++ API: SessionOptions::kernel_libraries
// and LoadKernelLibrary, with the example library (examples/plugin) built
// by its Makefile against the SDK. tests/plugin_test.sh covers the command
// line and each way a library is refused.
#include "actorflow/kernel_library.h"

#include <catch2/catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/kernel.h"
#include "actorflow/session.h"
#include "actorflow/version.h"
#include "kernels/builtin_kernels.h"
#include "plan/plan_builder.h"

namespace actorflow::internal {
namespace {

constexpr char kLibrary[] = "examples/plugin/libaffine_kernels.so";
// The same library built against headers whose ACTORFLOW_ABI_VERSION is 9999.
constexpr char kOtherAbiLibrary[] = "tests/libaffine_kernels_other_abi.so";

class Passthrough final : public Kernel {
 public:
  absl::Status Forward(KernelContext*) override { return absl::OkStatus(); }
};

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

TEST_CASE("a library built against another kernel ABI is refused") {
  const std::vector<std::string> before = KernelRegistry::Get().op_types();
  SessionOptions options;
  options.kernel_libraries = {kOtherAbiLibrary};
  auto session = Session::Create(AffinePlan(), std::move(options));
  REQUIRE_FALSE(session.ok());
  CHECK(session.status().code() == absl::StatusCode::kInvalidArgument);
  const std::string message(session.status().message());
  CHECK_THAT(message, Catch::Contains(absl::StrCat(
                          "kernel library '", kOtherAbiLibrary,
                          "' was built against actorflow kernel ABI 9999")));
  CHECK_THAT(message,
             Catch::Contains(absl::StrCat("this runtime has kernel ABI ",
                                          ACTORFLOW_ABI_VERSION)));
  // Refused before it was loaded: nothing of it registered or listed.
  CHECK(KernelRegistry::Get().op_types() == before);
  for (const LoadedKernelLibrary& loaded : LoadedKernelLibraries()) {
    CHECK(loaded.path != kOtherAbiLibrary);
  }
}

TEST_CASE("a registration stamped with another kernel ABI is not kept") {
  KernelRegistry& registry = KernelRegistry::Get();
  auto factory = [] { return std::make_unique<Passthrough>(); };
  CHECK_FALSE(registry.Register("kernel_library_test.other_abi", factory,
                                DeviceKind::kCpu,
                                ACTORFLOW_KERNEL_ABI_STAMP_PREFIX "9999;"));
  CHECK_FALSE(registry.Register("kernel_library_test.no_abi", factory,
                                DeviceKind::kCpu, nullptr));
  CHECK_FALSE(registry.Has("kernel_library_test.other_abi"));
  CHECK_FALSE(registry.Has("kernel_library_test.no_abi"));
  // This build's own stamp, the default, is.
  CHECK(registry.Register("kernel_library_test.this_abi", factory));
  CHECK(registry.Has("kernel_library_test.this_abi"));
}

}  // namespace
}  // namespace actorflow::internal
