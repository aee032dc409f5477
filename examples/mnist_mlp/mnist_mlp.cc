// Trains a perceptron (784-256-10 by default) on Fashion-MNIST as an
// actorflow plan:
//   tools/bazel run //examples/mnist_mlp -- --epochs=2
// Prints each epoch's training loss, test accuracy and samples/s, then one
// JSON line: {"status":"ok","epochs":E,"test_accuracy":A,"final_loss":L,
// "samples_per_s":R,"weights_crc32":"..."} (with --resume also
// "resumed_from_step") or {"status":"error","error":"..."} and exit 1.
#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "examples/mnist_mlp/mnist_training.h"
#include "examples/pipeline/cli_flags.h"
#include "memory/cuda_api.h"
#include "nn/cpu_isa.h"
#include "nn/dense_math.h"
#include "runtime/checkpoint.h"
#include "runtime/chrome_trace.h"
#include "runtime/json.h"

namespace {

using actorflow::JsonNumber;
using actorflow::JsonString;
using actorflow::examples::CliFlags;
using actorflow::examples::EpochReport;
using actorflow::examples::MnistOptions;

constexpr char kUsage[] = R"(usage: mnist_mlp [flags]

Trains a perceptron (784 inputs, --hidden ReLU layers, 10 classes; softmax
cross-entropy; SGD with momentum) on Fashion-MNIST, as one actorflow plan.
Its layers are split over --streams CPU streams by their units (every stream
sees the whole batch and holds a slice of each large weight matrix), and the
plan reads the IDX files itself, so the streams keep the cores. Each weight
is a `variable` task in a cycle with its `sgd_momentum` optimizer. The test
set is evaluated after every epoch.

flags:
  --epochs=N          passes over the training set (2)
  --batch=N           samples per step (64)
  --hidden=N[,N...]   units of each hidden layer (256), e.g. 1024,1024
  --lr=X              learning rate (0.02)
  --momentum=X        momentum (0.9)
  --decay=X           the learning rate is multiplied by X after each epoch
                      (0.2)
  --streams=N         CPU streams the layers are split over (2); every
                      hidden layer needs at least N units. --towers=N is
                      the same flag under its old name
  --seed=N            initial weights and shuffling (1)
  --train_limit=N     train on the first N samples only (0: all 60000)
  --test_limit=N      evaluate on the first N samples only (0: all 10000)
  --data=plan|pipelines
                      plan: the plan reads the IDX files itself (default);
                      pipelines: two data pipelines on their own threads
                      feed it (same batches, same numbers)
  --threads=N         data pipeline worker threads, with --data=pipelines (1)
  --prefetch=N        batches the data pipelines prepare ahead (2)
  --data_dir=DIR      the Fashion-MNIST IDX files (default: the
                      dataset-fashion-mnist package's, or
                      $ACTORFLOW_FASHION_MNIST)
  --reference         run the sequential reference loop instead of the plan
                      (same arithmetic, one thread; same numbers)
  --gpu               run the streams on GPU streams of device 0 (CUDA builds
                      and the emulated device; results agree with the CPU
                      within float rounding)
  --checkpoint_dir=DIR
                      write checkpoints under DIR: every weight, optimizer
                      velocity and step count, the data's place and the
                      epoch's running totals, at a cut between steps;
                      atomically, checksummed, while training goes on.
                      One at the end, and one every --checkpoint_every
  --checkpoint_every=STEPS
                      a checkpoint after every STEPS training steps
  --resume            start from the newest checkpoint in --checkpoint_dir
                      (none yet: from the beginning, saying so); with the
                      same flags, a run killed at any moment and resumed
                      ends with the same loss, accuracy and weights, bit for
                      bit, as one never stopped
  --keep_last=N       keep only the newest N checkpoints (default: all)
  --write_plan=FILE   write the training plan (text format) and continue
  --trace=FILE        write a Chrome trace of every act; prints each
                      stream's busy share
  --help              this text

The dense arithmetic runs at the best vector level the CPU has (AVX-512,
AVX2+FMA or SSE2, picked at start-up); $ACTORFLOW_ISA=baseline|avx2|avx512
pins a lower one (results are bit-identical at one level).
)";

// "1024,1024" -> {1024, 1024}.
absl::StatusOr<std::vector<int64_t>> ParseLayers(const std::string& text) {
  std::vector<int64_t> units;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int64_t n = 0;
    if (!absl::SimpleAtoi(part, &n) || n < 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--hidden: a comma-separated list of positive unit counts, got '",
          text, "'"));
    }
    units.push_back(n);
  }
  return units;
}

int Fail(const std::string& message) {
  std::printf("{\"status\":\"error\",\"error\":%s}\n",
              JsonString(message).c_str());
  std::fflush(stdout);
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  CliFlags flags({{"epochs", "2"},
                  {"batch", "64"},
                  {"hidden", "256"},
                  {"lr", "0.02"},
                  {"decay", "0.2"},
                  {"momentum", "0.9"},
                  {"streams", ""},
                  {"towers", ""},
                  {"data", "plan"},
                  {"seed", "1"},
                  {"train_limit", "0"},
                  {"test_limit", "0"},
                  {"threads", "1"},
                  {"prefetch", "2"},
                  {"data_dir", ""},
                  {"reference", "false"},
                  {"write_plan", ""},
                  {"checkpoint_dir", ""},
                  {"checkpoint_every", "0"},
                  {"keep_last", "0"},
                  {"trace", ""}});
  // --reference, --gpu and --resume take no value.
  std::vector<char*> args;
  bool reference = false, gpu = false, resume = false;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--reference") {
      reference = true;
    } else if (std::string(argv[i]) == "--gpu") {
      gpu = true;
    } else if (std::string(argv[i]) == "--resume") {
      resume = true;
    } else {
      args.push_back(argv[i]);
    }
  }
  bool help = false;
  absl::Status parsed =
      flags.Parse(static_cast<int>(args.size()), args.data(), &help);
  if (help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s\n\n%s", std::string(parsed.message()).c_str(),
                 kUsage);
    return Fail(std::string(parsed.message()));
  }
  if (flags.String("reference") == "true") reference = true;

  MnistOptions options;
  auto epochs = flags.Int("epochs", 1);
  auto batch = flags.Int("batch", 1);
  auto hidden = ParseLayers(flags.String("hidden"));
  if (!flags.String("streams").empty() && !flags.String("towers").empty()) {
    return Fail("give --streams or --towers (its old name), not both");
  }
  const std::string streams_flag =
      !flags.String("towers").empty() ? "towers" : "streams";
  if (flags.String(streams_flag).empty()) flags.Set(streams_flag, "2");
  auto towers = flags.Int(streams_flag, 1);
  const std::string data = flags.String("data");
  if (data != "plan" && data != "pipelines") {
    return Fail(absl::StrCat("--data: plan or pipelines, got '", data, "'"));
  }
  if (auto isa = actorflow::nn::IsaFromEnvironment(); !isa.ok()) {
    return Fail(std::string(isa.status().message()));
  }
  auto seed = flags.Int("seed", 0);
  auto train_limit = flags.Int("train_limit", 0);
  auto test_limit = flags.Int("test_limit", 0);
  auto threads = flags.Int("threads", 1);
  auto prefetch = flags.Int("prefetch", 1);
  auto lr = flags.Double("lr", 0);
  auto momentum = flags.Double("momentum", 0);
  auto decay = flags.Double("decay", 0);
  auto checkpoint_every = flags.Int("checkpoint_every", 0);
  auto keep_last = flags.Int("keep_last", 0);
  for (const absl::Status& status :
       {epochs.status(), batch.status(), hidden.status(), towers.status(),
        seed.status(), train_limit.status(), test_limit.status(),
        threads.status(), prefetch.status(), lr.status(), momentum.status(),
        decay.status(), checkpoint_every.status(), keep_last.status()}) {
    if (!status.ok()) return Fail(std::string(status.message()));
  }
  options.checkpoint_dir = flags.String("checkpoint_dir");
  options.checkpoint_every = *checkpoint_every;
  options.keep_last = static_cast<int>(*keep_last);
  options.resume = resume;
  if (options.checkpoint_dir.empty() &&
      (resume || *checkpoint_every > 0 || *keep_last > 0)) {
    return Fail(absl::StrCat(resume           ? "--resume"
                             : *keep_last > 0 ? "--keep_last"
                                              : "--checkpoint_every",
                             " needs --checkpoint_dir=DIR"));
  }
  if (!options.checkpoint_dir.empty() && reference) {
    return Fail(
        "--checkpoint_dir: checkpoints are of the plan, not of "
        "--reference");
  }
  options.epochs = static_cast<int>(*epochs);
  options.model.batch_size = *batch;
  options.model.hidden = *hidden;
  options.model.streams = static_cast<int>(*towers);
  options.pipelines = data == "pipelines";
  options.model.gpu = gpu;
  if (gpu && !reference) {
    // One line rather than the plan's error for every GPU task.
    absl::Status usable = actorflow::cuda::DeviceAvailable(0);
    if (!usable.ok()) {
      return Fail(absl::StrCat("--gpu: no usable GPU: ", usable.message()));
    }
  }
  options.model.seed = static_cast<uint64_t>(*seed);
  options.model.lr = *lr;
  options.model.momentum = *momentum;
  options.model.decay = *decay;
  options.decay_per_epoch = true;
  options.data_seed = static_cast<uint64_t>(*seed);
  options.train_limit = *train_limit;
  options.test_limit = *test_limit;
  options.data_threads = static_cast<int>(*threads);
  options.prefetch = static_cast<int>(*prefetch);
  options.data_dir = flags.String("data_dir");
  const std::string trace_path = flags.String("trace");
  options.trace = !trace_path.empty();

  if (!flags.String("write_plan").empty()) {
    auto plan = actorflow::nn::BuildMlpPlan(options.model);
    if (!plan.ok()) return Fail(std::string(plan.status().message()));
    std::ofstream out(flags.String("write_plan"));
    out << plan->DebugString();
    if (!out) {
      return Fail(absl::StrCat("--write_plan: cannot write '",
                               flags.String("write_plan"), "'"));
    }
  }

  auto report = [](const EpochReport& e) {
    std::printf(
        "epoch %d: train loss %.4f, test loss %.4f, test accuracy %.2f%% "
        "(%lld samples), %.0f samples/s (train %.2f s, eval %.2f s)\n",
        e.epoch, e.train_loss, e.test_loss, 100 * e.test_accuracy,
        static_cast<long long>(e.test_samples), e.samples_per_s,
        e.train_seconds, e.eval_seconds);
    std::fflush(stdout);
  };
  std::string layers = absl::StrCat(options.model.inputs);
  for (int64_t h : options.model.hidden) absl::StrAppend(&layers, "-", h);
  absl::StrAppend(&layers, "-", options.model.classes);
  std::printf(
      "training %s: %s, batch %lld, %d stream(s), lr %g, momentum %g, "
      "%s arithmetic\n",
      reference ? "with the sequential reference loop"
      : gpu     ? "as a plan on GPU streams"
                : "as a plan",
      layers.c_str(), static_cast<long long>(options.model.batch_size),
      options.model.streams, options.model.lr, options.model.momentum,
      actorflow::nn::IsaName(actorflow::nn::DenseIsa()));
  if (resume) {
    auto found = actorflow::ResolveCheckpoint(options.checkpoint_dir);
    if (found.ok()) {
      std::printf("--resume: resuming from %s\n", found->c_str());
    } else if (absl::IsNotFound(found.status())) {
      std::printf(
          "--resume: no checkpoint in %s yet: starting from the beginning\n",
          options.checkpoint_dir.c_str());
    } else {
      return Fail(std::string(found.status().message()));
    }
    std::fflush(stdout);
  }
  auto summary = reference
                     ? actorflow::examples::TrainSequential(options, report)
                     : actorflow::examples::TrainWithPlan(options, report);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  if (summary->resumed_from_step > 0) {
    std::printf("--resume: went on from training step %lld\n",
                static_cast<long long>(summary->resumed_from_step));
  }
  if (summary->checkpoints > 0) {
    std::printf(
        "%lld checkpoint(s) in %s: %lld bytes of state each, training "
        "paused %.2f ms, written in %.2f ms beside it\n",
        static_cast<long long>(summary->checkpoints),
        options.checkpoint_dir.c_str(),
        static_cast<long long>(summary->checkpoint_bytes),
        summary->checkpoint_pause_ms, summary->checkpoint_write_ms);
  }
  if (options.trace && !reference) {
    absl::Status written =
        actorflow::WriteChromeTrace(summary->trace, trace_path);
    if (!written.ok()) return Fail(std::string(written.message()));
    for (const auto& [stream, share] :
         actorflow::examples::StreamBusyShares(summary->trace)) {
      std::printf("stream %s busy %.1f%%\n", stream.c_str(), 100 * share);
    }
  }
  const EpochReport& last = summary->epochs.back();
  std::string extra;
  if (!summary->weights_crc32.empty()) {
    extra =
        absl::StrCat(",\"weights_crc32\":", JsonString(summary->weights_crc32));
  }
  if (summary->resumed_from_step >= 0) {
    absl::StrAppend(&extra,
                    ",\"resumed_from_step\":", summary->resumed_from_step);
  }
  std::printf(
      "{\"status\":\"ok\",\"epochs\":%d,\"test_accuracy\":%s,"
      "\"final_loss\":%s,\"samples_per_s\":%s%s}\n",
      options.epochs, JsonNumber(last.test_accuracy).c_str(),
      JsonNumber(last.train_loss).c_str(),
      JsonNumber(summary->samples_per_s).c_str(), extra.c_str());
  return 0;
}
