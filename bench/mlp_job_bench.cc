// The perceptron's two parallel plans, both compiled from jobs: one epoch
// of Fashion-MNIST (600 training batches of 100, 784 -> 128 ReLU -> 10, SGD
// with momentum) on two CPU threads, in alternation. The data-parallel job
// (examples/jobs/mlp_two_devices.pbtxt) splits each batch's rows over two
// devices and sums the gradients through boxing tasks; nn::BuildMlpPlan's
// job splits each layer's units over two towers (tensor parallel). Prints
// the medians of the epoch's time, their per-pair ratio (BuildMlpPlan /
// data-parallel job: above 1, the data-parallel plan is faster) and each
// plan's register bytes.
//   tools/bazel run //bench:mlp_job_bench [-- --samples=7]
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "actorflow/blob_desc.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/job_compiler.h"
#include "actorflow/session.h"
#include "bench/bench_util.h"
#include "compiler/plan_or_job.h"
#include "nn/mlp.h"
#include "pipeline/dataset.h"

namespace actorflow::internal {
namespace {

[[noreturn]] void Die(const std::string& what, const absl::Status& status) {
  std::fprintf(stderr, "mlp_job_bench: %s: %s\n", what.c_str(),
               std::string(status.message()).c_str());
  std::exit(1);
}

// Every buffer of every register, counted as the runtime and the
// compiler's report count them (a shared block once, at its largest).
int64_t RegisterBytes(const Plan& plan) {
  auto compiled = CompilePlan(plan);
  if (!compiled.ok()) Die("builder plan", compiled.status());
  int64_t total = 0;
  std::map<int64_t, int64_t> blocks;
  for (const TaskProto& task : (*compiled)->plan.task()) {
    for (const auto& [key, desc] : task.produced_regst_desc()) {
      const int64_t each =
          RegisterBufferBytes((*compiled)->blobs.at(desc.regst_desc_id()));
      if (desc.mem_block_id() != 0) {
        blocks[desc.mem_block_id()] =
            std::max(blocks[desc.mem_block_id()], each);
      } else {
        total += each * desc.register_num();
      }
    }
  }
  for (const auto& [id, bytes] : blocks) total += bytes;
  return total;
}

nn::MlpConfig BuilderConfig() {
  const std::string dir = pipeline::kFashionMnistDir;
  nn::MlpConfig config;
  config.hidden = {128};
  config.batch_size = 100;
  config.streams = 2;
  config.lr = 0.05;
  config.momentum = 0.9;
  nn::MlpData data;
  data.train_images = dir + "/train-images-idx3-ubyte.gz";
  data.train_labels = dir + "/train-labels-idx1-ubyte.gz";
  data.test_images = dir + "/t10k-images-idx3-ubyte.gz";
  data.test_labels = dir + "/t10k-labels-idx1-ubyte.gz";
  data.test_limit = 100;  // one evaluation batch: the epoch is training
  data.shuffle_window = 60000;
  data.mean = 72.94;
  data.std = 90.02;
  config.data = data;
  return config;
}

// One epoch through the builder's plan, in ms.
double BuilderEpoch(int64_t* register_bytes) {
  auto trainer = nn::MlpTrainer::Create(BuilderConfig());
  if (!trainer.ok()) Die("builder plan", trainer.status());
  *register_bytes = RegisterBytes((*trainer)->plan());
  const int64_t start = bench::NowNs();
  absl::Status ok = (*trainer)->Start(-1);
  for (int64_t p = 0; ok.ok() && p < (*trainer)->schedule().period(); ++p) {
    ok = (*trainer)->Collect().status();
  }
  if (ok.ok()) ok = (*trainer)->Finish();
  if (!ok.ok()) Die("builder run", ok);
  return (bench::NowNs() - start) / 1e6;
}

// One epoch through the compiled job's plan, in ms.
double JobEpoch(const Plan& plan) {
  auto session = Session::Create(plan);
  if (!session.ok()) Die("job session", session.status());
  const int64_t start = bench::NowNs();
  auto run = (*session)->Run(-1);
  if (!run.ok()) Die("job run", run.status());
  return (bench::NowNs() - start) / 1e6;
}

}  // namespace
}  // namespace actorflow::internal

int main(int argc, char** argv) {
  using namespace actorflow;            // NOLINT(build/namespaces)
  using namespace actorflow::internal;  // NOLINT(build/namespaces)
  int64_t samples = 7;
  bench::ParseFlags("mlp_job_bench", argc, argv,
                    {{"samples", &samples, "pairs of epochs (median shown)"}},
                    "One epoch of the MLP as a compiled job and as "
                    "nn::BuildMlpPlan's plan, in alternation.");
  auto job = LoadJob("examples/jobs/mlp_two_devices.pbtxt");
  if (!job.ok()) Die("examples/jobs/mlp_two_devices.pbtxt", job.status());
  auto compiled = CompileJob(*job);
  if (!compiled.ok()) Die("compile", compiled.status());
  JobCompileOptions unshared_options;
  unshared_options.share_memory = false;
  auto unshared = CompileJob(*job, unshared_options);
  if (!unshared.ok()) Die("compile without sharing", unshared.status());
  int64_t builder_bytes = 0;
  const bench::Paired paired = bench::PairedMedians(
      static_cast<int>(samples), [&] { return JobEpoch(compiled->plan); },
      [&] { return BuilderEpoch(&builder_bytes); });
  std::printf("%-34s %10s %16s\n", "plan", "ms/epoch", "register bytes");
  std::printf("%-34s %10.1f %16lld\n", "compiled job (2 devices)",
              paired.subject,
              static_cast<long long>(compiled->report.register_bytes));
  std::printf("%-34s %10s %16lld\n", "compiled job, no memory sharing", "",
              static_cast<long long>(unshared->report.register_bytes));
  std::printf("%-34s %10.1f %16lld\n", "nn::BuildMlpPlan (2 streams)",
              paired.baseline, static_cast<long long>(builder_bytes));
  std::printf(
      "memory sharing: %d blocks of %d registers, %d registers at one "
      "buffer; register bytes %lld with, %lld without (%.2fx)\n",
      compiled->report.shared_blocks, compiled->report.shared_registers,
      compiled->report.single_buffer_registers,
      static_cast<long long>(compiled->report.register_bytes),
      static_cast<long long>(unshared->report.register_bytes),
      static_cast<double>(unshared->report.register_bytes) /
          static_cast<double>(compiled->report.register_bytes));
  std::printf("builder / job (median of per-pair ratios): %.3fx\n",
              paired.ratio);
  return 0;
}
