// GPU benchmark: the stream machinery on a real device.
//
// 1. Notification latency: launch a one-element kernel, then learn it is
//    done through the CUDA stream's event and the callback poller (what a
//    downstream actor waits for), against cudaStreamSynchronize after the
//    same launch. Medians over many round trips.
// 2. Pipeline throughput: a plan of GPU tasks on their own streams (source,
//    three `spin` kernels of --kernel-us each, a device checksum), run with
//    register_num 1, 2 and 4, against the same kernels launched in a loop
//    with one cudaStreamSynchronize per kernel. Target: pipelined >= 2x the
//    synchronous loop for kernels of about 10 us.
//
// Without a usable device it prints SKIPPED with the reason and exits 0.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <vector>

#include "actorflow/cuda_api.h"
#include "bench/bench_util.h"
#include "kernels/gpu/launch.h"
#include "plan/plan_builder.h"
#include "runtime/runtime.h"
#include "thread/callback_poller.h"
#include "thread/cpu_relax.h"
#include "thread/cuda_stream.h"

namespace actorflow::internal::bench {
namespace {

constexpr char kHelp[] = R"(gpu_bench: stream callback latency and pipelined
GPU throughput against a cudaStreamSynchronize loop (see bench/gpu_bench.cc).)";

constexpr int kStages = 3;  // spin kernels per piece

void Check(const absl::Status& status) {
  if (status.ok()) return;
  std::fprintf(stderr, "gpu_bench: %s\n",
               std::string(status.message()).c_str());
  std::exit(1);
}

// Median nanoseconds from launch to the poller's callback.
double PollerLatencyNs(CudaStream* stream, CallbackPoller* poller,
                       int64_t round_trips) {
  std::vector<double> ns;
  std::atomic<int64_t> done_at{0};
  for (int64_t i = 0; i < round_trips; ++i) {
    done_at.store(0, std::memory_order_relaxed);
    int64_t start = NowNs();
    gpu::LaunchSpin(0, stream->native_handle());
    Check(poller->AddCallback(stream, [&](absl::Status status) {
      Check(status);
      done_at.store(NowNs(), std::memory_order_release);
    }));
    while (done_at.load(std::memory_order_acquire) == 0) CpuRelax();
    ns.push_back(static_cast<double>(done_at.load() - start));
  }
  return Median(ns);
}

double SyncLatencyNs(CudaStream* stream, int64_t round_trips) {
  std::vector<double> ns;
  for (int64_t i = 0; i < round_trips; ++i) {
    int64_t start = NowNs();
    gpu::LaunchSpin(0, stream->native_handle());
    Check(cuda::StreamSynchronize(0, stream->native_handle()));
    ns.push_back(static_cast<double>(NowNs() - start));
  }
  return Median(ns);
}

Plan PipelinePlan(int32_t register_num, int64_t kernel_us, int64_t pieces) {
  std::vector<TaskDef> tasks;
  tasks.push_back({.name = "src", .op_type = "source", .gpu = true});
  std::string last = "src";
  for (int s = 0; s < kStages; ++s) {
    TaskDef spin{.name = "spin" + std::to_string(s),
                 .op_type = "spin",
                 .inputs = {last},
                 .stream_index = s + 1,
                 .gpu = true};
    spin.attrs["us"] = IntAttr(kernel_us);
    tasks.push_back(spin);
    last = spin.name;
  }
  tasks.push_back({.name = "sink",
                   .op_type = "checksum",
                   .inputs = {last},
                   .stream_index = kStages + 1,
                   .gpu = true,
                   .has_output = false});
  for (TaskDef& task : tasks) {
    task.register_num = register_num;
    task.elem_cnt = 256;
  }
  absl::StatusOr<Plan> plan = BuildPlan(tasks, pieces);
  Check(plan.status());
  return *plan;
}

// Pieces per second through the actor pipeline.
double PipelineRate(const Plan& plan, int64_t pieces) {
  absl::StatusOr<RunResult> result = RunPlan(plan);
  Check(result.status());
  const SinkSummary& sink = result->sinks.at("sink");
  if (sink.pieces != pieces || !sink.in_order) {
    std::fprintf(stderr, "gpu_bench: pipeline lost or reordered pieces\n");
    std::exit(1);
  }
  return pieces / (result->wall_ms / 1e3);
}

// The same kernels, one stream, synchronized after each.
double SyncLoopRate(CudaStream* stream, float* a, float* b, double* scratch,
                    int64_t kernel_us, int64_t pieces) {
  void* s = stream->native_handle();
  int64_t start = NowNs();
  for (int64_t p = 0; p < pieces; ++p) {
    float value = static_cast<float>(p);
    uint32_t pattern;
    std::memcpy(&pattern, &value, sizeof(pattern));
    gpu::LaunchFill(a, 256, sizeof(float), pattern, s);
    Check(cuda::StreamSynchronize(0, s));
    for (int k = 0; k < kStages; ++k) {
      gpu::LaunchSpin(kernel_us * 1000, s);
      Check(cuda::MemcpyAsync(b, a, 256 * sizeof(float), s));
      Check(cuda::StreamSynchronize(0, s));
    }
    gpu::LaunchSum(gpu::kFloat32, b, 256, scratch, scratch + gpu::kSumPartials,
                   p == 0, s);
    Check(cuda::StreamSynchronize(0, s));
  }
  return pieces / ((NowNs() - start) / 1e9);
}

int Main(int argc, char** argv) {
  int64_t samples = 7, round_trips = 2000, pieces = 3000, kernel_us = 10;
  ParseFlags(
      "gpu_bench", argc, argv,
      {{"samples", &samples, "timed samples per figure (median shown)"},
       {"round-trips", &round_trips, "launches per latency sample"},
       {"pieces", &pieces, "pieces per pipeline sample"},
       {"kernel-us", &kernel_us, "length of each pipeline kernel, in us"}},
      kHelp);
  absl::Status device = cuda::DeviceAvailable(0);
  if (!device.ok()) {
    std::printf("SKIPPED: gpu_bench: %s\n",
                std::string(device.message()).c_str());
    return 0;
  }
  if (cuda::EmulatedDevice()) {
    std::printf(
        "note: EMULATED device (--config=emulated_gpu): host threads, "
        "not a GPU; these figures only show the code runs\n\n");
  }
  Check(cuda::SetDevice(0));
  auto stream = CudaStream::Create(0, "bench");
  Check(stream.status());
  CallbackPoller poller("bench-p");

  std::vector<double> poller_ns, sync_ns;
  PollerLatencyNs(stream->get(), &poller, 100);  // warm up
  for (int64_t i = 0; i < samples; ++i) {
    poller_ns.push_back(PollerLatencyNs(stream->get(), &poller, round_trips));
    sync_ns.push_back(SyncLatencyNs(stream->get(), round_trips));
  }
  std::printf("notification latency, empty kernel (median of %lld samples):\n",
              static_cast<long long>(samples));
  std::printf("  event + poller callback   %8.2f us\n",
              Median(poller_ns) / 1e3);
  std::printf("  cudaStreamSynchronize     %8.2f us   (poller / sync %.2f)\n",
              Median(sync_ns) / 1e3, Median(poller_ns) / Median(sync_ns));

  auto a = cuda::DeviceMalloc(0, 256 * sizeof(float));
  auto b = cuda::DeviceMalloc(0, 256 * sizeof(float));
  auto scratch =
      cuda::DeviceMalloc(0, (gpu::kSumPartials + 1) * sizeof(double));
  Check(a.status());
  Check(b.status());
  Check(scratch.status());
  std::printf(
      "\npipeline: source -> %d x spin(%lld us) -> checksum, %lld "
      "pieces, each task on its own GPU stream:\n",
      kStages, static_cast<long long>(kernel_us),
      static_cast<long long>(pieces));
  std::vector<double> sync_rates;
  std::vector<std::vector<double>> rates(3);
  const int32_t register_nums[] = {1, 2, 4};
  for (int64_t i = 0; i <= samples; ++i) {  // sample 0 warms up
    double sync = SyncLoopRate(
        stream->get(), static_cast<float*>(*a), static_cast<float*>(*b),
        static_cast<double*>(*scratch), kernel_us, pieces);
    if (i > 0) sync_rates.push_back(sync);
    for (int r = 0; r < 3; ++r) {
      double rate = PipelineRate(
          PipelinePlan(register_nums[r], kernel_us, pieces), pieces);
      if (i > 0) rates[r].push_back(rate);
    }
  }
  double sync = Median(sync_rates);
  std::printf("  sync loop (1 stream, sync per kernel) %9.0f pieces/s\n", sync);
  for (int r = 0; r < 3; ++r) {
    double rate = Median(rates[r]);
    std::printf(
        "  actors, register_num %d            %9.0f pieces/s   %.2fx "
        "sync%s\n",
        register_nums[r], rate, rate / sync, r == 1 ? "   (target >= 2x)" : "");
  }
  cuda::DeviceFree(0, *a);
  cuda::DeviceFree(0, *b);
  cuda::DeviceFree(0, *scratch);
  return 0;
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  return actorflow::internal::bench::Main(argc, argv);
}
