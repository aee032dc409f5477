// The GPU half of the runtime on a real device: GPU kernels against their
// CPU versions through whole plans, the gpu_pipeline example against its
// CPU twin, a stress run per register_num, and the CUDA stream's events and
// callbacks. Every case prints SKIPPED with the reason where no device is
// usable (CI machines have the toolkit but no GPU).
//
// Also runs outside Bazel (a statically linked copy carried to a GPU
// machine, see tools/gpu_bundle): example plans are then read relative to
// the working directory, the repository root.
#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "actorflow/cuda_api.h"
#include "actorflow/kernel.h"
#include "actorflow/plan_loader.h"
#include "kernels/gpu/launch.h"
#include "plan/plan_builder.h"
#include "runtime/runtime.h"
#include "tests/gpu_test_util.h"
#include "thread/callback_poller.h"
#include "thread/cuda_stream.h"

namespace actorflow::internal {
namespace {

std::string ExamplePlan(const std::string& name) {
  std::string path = "examples/plans/" + name;
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* workspace = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr && workspace != nullptr) {
    return std::string(srcdir) + "/" + workspace + "/" + path;
  }
  return path;
}

SinkSummary RunToSink(const Plan& plan) {
  absl::StatusOr<RunResult> result = RunPlan(plan);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  REQUIRE(result->sinks.count("sink") == 1);
  return result->sinks.at("sink");
}

Plan Build(const std::vector<TaskDef>& tasks, int64_t pieces) {
  absl::StatusOr<Plan> plan = BuildPlan(tasks, pieces);
  REQUIRE(plan.ok());
  return *plan;
}

// The same tasks on CPU streams: copies become identities.
std::vector<TaskDef> OnCpu(std::vector<TaskDef> tasks) {
  for (TaskDef& task : tasks) {
    task.gpu = false;
    if (task.op_type == "h2d" || task.op_type == "d2h") {
      task.op_type = "identity";
    }
  }
  return tasks;
}

// src (CPU) -> up (h2d, GPU s1) -> `middle` (GPU s0, fed by "up") ->
// down (d2h from `last`, GPU s2) -> sink (CPU checksum).
std::vector<TaskDef> Chain(std::vector<TaskDef> middle, const std::string& last,
                           int32_t register_num, int64_t elem_cnt) {
  std::vector<TaskDef> tasks;
  TaskDef src{.name = "src", .op_type = "source"};
  src.attrs["value"] = FloatAttr(0.37);
  src.attrs["step"] = FloatAttr(1.25);
  tasks.push_back(src);
  tasks.push_back({.name = "up",
                   .op_type = "h2d",
                   .inputs = {"src"},
                   .stream_index = 1,
                   .gpu = true});
  for (TaskDef& task : middle) {
    task.gpu = true;
    tasks.push_back(task);
  }
  tasks.push_back({.name = "down",
                   .op_type = "d2h",
                   .inputs = {last},
                   .stream_index = 2,
                   .gpu = true});
  tasks.push_back({.name = "sink",
                   .op_type = "checksum",
                   .inputs = {"down"},
                   .has_output = false});
  for (TaskDef& task : tasks) {
    task.register_num = register_num;
    task.elem_cnt = elem_cnt;
  }
  return tasks;
}

TaskDef Scale(const std::string& name, const std::string& input,
              double factor) {
  TaskDef task{.name = name, .op_type = "scale", .inputs = {input}};
  task.attrs["factor"] = FloatAttr(factor);
  return task;
}

void ExpectSameAsCpu(const std::vector<TaskDef>& gpu_tasks, int64_t pieces) {
  SinkSummary gpu = RunToSink(Build(gpu_tasks, pieces));
  SinkSummary cpu = RunToSink(Build(OnCpu(gpu_tasks), pieces));
  CHECK(gpu.pieces == pieces);
  CHECK(gpu.in_order);
  // Element-wise kernels are bit-exact, and the checksum runs on the CPU.
  CHECK(gpu.checksum == cpu.checksum);
}

// A GPU kernel that fails at piece `at_piece` (before launching anything)
// and copies otherwise: the failure path of GPU streams.
class GpuFailKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::StatusOr<int64_t> at = ctx.IntAttr("at_piece");
    if (!at.ok()) return at.status();
    at_piece_ = *at;
    return ctx.ExpectInputs(1, 1);
  }
  absl::Status Forward(KernelContext* ctx) override {
    if (ctx->piece_id() == at_piece_) {
      return absl::AbortedError("gpu fail kernel: reached at_piece");
    }
    TensorView out = ctx->output(0).blob(0);
    return cuda::MemcpyAsync(out.mutable_raw_data(),
                             ctx->input(0).blob(0).raw_data(), out.byte_size(),
                             ctx->cuda_stream());
  }

 private:
  int64_t at_piece_ = 0;
};
ACTORFLOW_REGISTER_GPU_KERNEL("test_gpu_fail", GpuFailKernel);

TEST_CASE("GPU: every element-wise GPU kernel equals its CPU version",
          "[gpu]") {
  if (!testing::GpuOrSkip("GPU kernels against CPU")) return;
  // 1000 elements: not a multiple of a block, so the tails are exercised.
  SECTION("identity") {
    ExpectSameAsCpu(
        Chain({{.name = "id", .op_type = "identity", .inputs = {"up"}}}, "id",
              2, 1000),
        50);
  }
  SECTION("scale") {
    ExpectSameAsCpu(Chain({Scale("x", "up", 1.7)}, "x", 2, 1000), 50);
  }
  for (int k : {1, 3, 10}) {  // 10: more terms than one launch takes
    DYNAMIC_SECTION("add of " << k) {
      std::vector<TaskDef> middle;
      TaskDef add{.name = "add", .op_type = "add"};
      for (int j = 0; j < k; ++j) {
        std::string name = "s" + std::to_string(j);
        middle.push_back(Scale(name, "up", 1.0 + 0.1 * j));
        add.inputs.push_back(name);
      }
      middle.push_back(add);
      ExpectSameAsCpu(Chain(middle, "add", 2, 1000), 30);
    }
  }
}

TEST_CASE("GPU: source and checksum on the device", "[gpu]") {
  if (!testing::GpuOrSkip("GPU source and checksum")) return;
  for (double value : {1.0, 0.37}) {
    std::vector<TaskDef> tasks = {
        {.name = "src", .op_type = "source", .gpu = true, .elem_cnt = 100000},
        {.name = "sink",
         .op_type = "checksum",
         .inputs = {"src"},
         .gpu = true,
         .has_output = false}};
    tasks[0].attrs["value"] = FloatAttr(value);
    SinkSummary gpu = RunToSink(Build(tasks, 40));
    SinkSummary cpu = RunToSink(Build(OnCpu(tasks), 40));
    CHECK(gpu.pieces == 40);
    CHECK(gpu.in_order);
    INFO("value " << value << ": gpu " << gpu.checksum << ", cpu "
                  << cpu.checksum);
    if (value == 1.0) {
      CHECK(gpu.checksum == cpu.checksum);  // exact sums: order is moot
    } else {
      // The device sums in a tree, the CPU in sequence: rounding differs.
      CHECK(gpu.checksum == Approx(cpu.checksum).epsilon(1e-12));
    }
  }
}

TEST_CASE("GPU: the gpu_pipeline example equals its CPU twin", "[gpu]") {
  if (!testing::GpuOrSkip("gpu_pipeline example")) return;
  absl::StatusOr<Plan> gpu = LoadPlan(ExamplePlan("gpu_pipeline.pbtxt"));
  absl::StatusOr<Plan> cpu = LoadPlan(ExamplePlan("gpu_pipeline_cpu.pbtxt"));
  REQUIRE(gpu.ok());
  REQUIRE(cpu.ok());
  absl::StatusOr<RunResult> gpu_result = RunPlan(*gpu);
  absl::StatusOr<RunResult> cpu_result = RunPlan(*cpu);
  INFO(gpu_result.status().ToString());
  REQUIRE(gpu_result.ok());
  REQUIRE(cpu_result.ok());
  const SinkSummary& g = gpu_result->sinks.at("checksum");
  CHECK(g.pieces == 1000);
  CHECK(g.in_order);
  CHECK(g.checksum == 2050048000.0);
  CHECK(g.checksum == cpu_result->sinks.at("checksum").checksum);
}

TEST_CASE("GPU: stress, many pieces, register_num 1 to 4", "[gpu]") {
  if (!testing::GpuOrSkip("GPU stress")) return;
  for (int32_t register_num = 1; register_num <= 4; ++register_num) {
    DYNAMIC_SECTION("register_num " << register_num) {
      // Two GPU compute streams besides the copy streams, and an add that
      // joins a value computed on each.
      std::vector<TaskDef> middle = {Scale("a", "up", 3.0),
                                     Scale("b", "up", 0.5),
                                     {.name = "add",
                                      .op_type = "add",
                                      .inputs = {"a", "b", "up"},
                                      .stream_index = 3}};
      ExpectSameAsCpu(Chain(middle, "add", register_num, 256), 20000);
    }
  }
}

TEST_CASE("GPU: a failing GPU kernel stops the run and names task and piece",
          "[gpu]") {
  if (!testing::GpuOrSkip("GPU kernel failure")) return;
  for (int64_t at : {0, 7, 49}) {
    TaskDef boom{.name = "boom", .op_type = "test_gpu_fail", .inputs = {"up"}};
    boom.attrs["at_piece"] = IntAttr(at);
    absl::StatusOr<RunResult> result =
        RunPlan(Build(Chain({boom}, "boom", 2, 100), 50));
    REQUIRE(!result.ok());
    CHECK(absl::IsAborted(result.status()));
    CHECK(result.status().message() ==
          "task 'boom' (task_id 3) failed at piece " + std::to_string(at) +
              ": gpu fail kernel: reached at_piece");
  }
}

TEST_CASE("GPU: a plan for a device this machine lacks is refused", "[gpu]") {
  if (!testing::GpuOrSkip("GPU device missing")) return;
  std::vector<TaskDef> tasks = Chain({Scale("x", "up", 2.0)}, "x", 2, 16);
  for (TaskDef& task : tasks) {
    if (task.gpu) task.device_index = 4096;
  }
  absl::StatusOr<RunResult> result = RunPlan(Build(tasks, 5));
  REQUIRE(!result.ok());
  CHECK(absl::IsInvalidArgument(result.status()));
  CHECK(result.status().message().find(
            "task 'up' (task_id 2): stream.device_type GPU (device 4096): "
            "this machine cannot serve it: CUDA device 4096 does not exist") !=
        std::string::npos);
}

TEST_CASE("GPU: a stream callback runs only after the work before it",
          "[gpu]") {
  if (!testing::GpuOrSkip("CUDA stream callbacks")) return;
  auto stream = CudaStream::Create(0, "test");
  REQUIRE(stream.ok());
  REQUIRE(cuda::SetDevice(0).ok());
  CallbackPoller poller("gpu-test-p");
  constexpr int kKernels = 20;
  constexpr int64_t kSpinNs = 200'000;
  std::vector<int64_t> done_after_ns(kKernels, -1);
  std::atomic<int> in_order{0};
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < kKernels; ++i) {
    gpu::LaunchSpin(kSpinNs, (*stream)->native_handle());
    REQUIRE(cuda::LastLaunchError("spin").ok());
    REQUIRE(poller
                .AddCallback(
                    stream->get(),
                    [&, i](absl::Status status) {
                      CHECK(status.ok());
                      done_after_ns[i] =
                          std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count();
                      if (in_order.load() == i) in_order.store(i + 1);
                    })
                .ok());
  }
  poller.Stop();  // runs every callback first
  CHECK(in_order.load() == kKernels);
  for (int i = 0; i < kKernels; ++i) {
    // The i-th callback waits for i + 1 spins of the same stream.
    CHECK(done_after_ns[i] >= (i + 1) * kSpinNs);
  }
}

TEST_CASE("GPU: events come from a pool", "[gpu]") {
  if (!testing::GpuOrSkip("CUDA event pool")) return;
  auto stream = CudaStream::Create(0, "pool");
  REQUIRE(stream.ok());
  for (int i = 0; i < 10000; ++i) {
    auto event = (*stream)->RecordEvent();
    REQUIRE(event.ok());
    REQUIRE((*stream)->WaitEvent(*event).ok());
    (*stream)->ReleaseEvent(*event);
  }
  CHECK((*stream)->events_created() == 1);
}

TEST_CASE("GPU: streams of a device that does not exist are refused", "[gpu]") {
  if (!testing::GpuOrSkip("CUDA stream on a missing device")) return;
  auto stream = CudaStream::Create(4096, "missing");
  REQUIRE(!stream.ok());
  CHECK(stream.status().message().find("CUDA device 4096") !=
        std::string::npos);
}

}  // namespace
}  // namespace actorflow::internal
