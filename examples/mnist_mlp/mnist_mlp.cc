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
#include "actorflow/checkpoint.h"
#include "actorflow/cuda_api.h"
#include "base/json.h"
#include "cli/flags.h"
#include "diagnosis/chrome_trace.h"
#include "examples/mnist_mlp/mnist_training.h"
#include "nn/cpu_isa.h"
#include "nn/dense_math.h"

namespace {

using actorflow::internal::Json;
using actorflow::internal::JsonNumber;
using actorflow::internal::PrintJsonLine;
using actorflow::internal::examples::EpochReport;
using actorflow::internal::examples::MnistOptions;

constexpr char kAbout[] =
    R"(Trains a perceptron (784 inputs, --hidden ReLU layers, 10 classes; softmax
cross-entropy; SGD with momentum) on Fashion-MNIST, as one actorflow plan.
Its layers are split over --streams CPU streams by their units (every stream
sees the whole batch and holds a slice of each large weight matrix), and the
plan reads the IDX files itself, so the streams keep the cores. Each weight
is a `variable` task in a cycle with its `sgd_momentum` optimizer. The test
set is evaluated after every epoch.)";

constexpr char kEpilog[] =
    R"(The dense arithmetic runs at the best vector level the CPU has (AVX-512,
AVX2+FMA or SSE2, picked at start-up); $ACTORFLOW_ISA=baseline|avx2|avx512
pins a lower one (results are bit-identical at one level).)";

// The flags, with their defaults.
struct Flags {
  int64_t epochs = 2;
  int64_t batch = 64;
  std::string hidden = "256";
  double lr = 0.02;
  double momentum = 0.9;
  double decay = 0.2;
  int64_t streams = 2;
  int64_t towers = 0;  // --streams' old name; 0: not given
  int64_t seed = 1;
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  std::string data = "plan";
  int64_t threads = 1;
  int64_t prefetch = 2;
  std::string data_dir;
  bool reference = false;
  bool gpu = false;
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool resume = false;
  int64_t keep_last = 0;
  std::string write_plan;
  std::string trace;
};

void Declare(actorflow::internal::FlagSet* set, Flags* f) {
  set->Int("epochs", &f->epochs, "passes over the training set", 1);
  set->Int("batch", &f->batch, "samples per step", 1);
  set->String("hidden", &f->hidden, "N[,N...]",
              "units of each hidden layer, e.g. 1024,1024");
  set->Double("lr", &f->lr, "learning rate", 0);
  set->Double("momentum", &f->momentum, "momentum", 0);
  set->Double("decay", &f->decay,
              "the learning rate is multiplied by X after each epoch", 0);
  set->Int("streams", &f->streams,
           "CPU streams the layers are split over; every hidden layer needs "
           "at least N units",
           1);
  set->Int("towers", &f->towers, "--streams under its old name", 1).NoDefault();
  set->Int("seed", &f->seed, "initial weights and shuffling", 0);
  set->Int("train-limit", &f->train_limit,
           "train on the first N samples only; 0: all 60000", 0);
  set->Int("test-limit", &f->test_limit,
           "evaluate on the first N samples only; 0: all 10000", 0);
  set->Choice("data", &f->data, {"plan", "pipelines"},
              "plan: the plan reads the IDX files itself; pipelines: two data "
              "pipelines on their own threads feed it (same batches, same "
              "numbers)");
  set->Int("threads", &f->threads,
           "data pipeline worker threads, with --data=pipelines", 1);
  set->Int("prefetch", &f->prefetch, "batches the data pipelines prepare ahead",
           1);
  set->String("data-dir", &f->data_dir, "DIR",
              "the Fashion-MNIST IDX files; default: the "
              "dataset-fashion-mnist package's, or $ACTORFLOW_FASHION_MNIST");
  set->Bool("reference", &f->reference,
            "run the sequential reference loop instead of the plan (same "
            "arithmetic, one thread; same numbers)");
  set->Bool("gpu", &f->gpu,
            "run the streams on GPU streams of device 0 (CUDA builds and the "
            "emulated device; results agree with the CPU within float "
            "rounding)");
  set->String("checkpoint-dir", &f->checkpoint_dir, "DIR",
              "write checkpoints under DIR: every weight, optimizer velocity "
              "and step count, the data's place and the epoch's running "
              "totals, at a cut between steps; atomically, checksummed, while "
              "training goes on. One at the end, and one every "
              "--checkpoint-every");
  set->Int("checkpoint-every", &f->checkpoint_every,
           "a checkpoint after every N training steps; 0: only at the end", 0);
  set->Bool("resume", &f->resume,
            "start from the newest checkpoint in --checkpoint-dir (none yet: "
            "from the beginning, saying so); with the same flags, a run "
            "killed at any moment and resumed ends with the same loss, "
            "accuracy and weights, bit for bit, as one never stopped");
  set->Int("keep-last", &f->keep_last,
           "keep only the newest N checkpoints; 0: all", 0);
  set->String("write-plan", &f->write_plan, "FILE",
              "write the training plan (text format) and continue");
  set->String("trace", &f->trace, "FILE",
              "write a Chrome trace of every act; prints each stream's busy "
              "share");
}

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
  PrintJsonLine({{"status", "error"}, {"error", message}});
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  Flags f;
  actorflow::internal::FlagSet flags("mnist_mlp [flags]", kAbout, kEpilog);
  Declare(&flags, &f);
  absl::Status parsed = flags.Parse(argc, argv);
  if (flags.help_requested()) {
    std::fputs(flags.Help().c_str(), stdout);
    return 0;
  }
  if (!parsed.ok()) {
    std::fprintf(stderr, "mnist_mlp: %s (see --help)\n",
                 std::string(parsed.message()).c_str());
    return Fail(std::string(parsed.message()));
  }
  const bool reference = f.reference, gpu = f.gpu, resume = f.resume;
  MnistOptions options;
  auto hidden = ParseLayers(f.hidden);
  if (!hidden.ok()) return Fail(std::string(hidden.status().message()));
  if (flags.given("streams") && flags.given("towers")) {
    return Fail("give --streams or --towers (its old name), not both");
  }
  const int64_t streams = flags.given("towers") ? f.towers : f.streams;
  if (auto isa = actorflow::internal::nn::IsaFromEnvironment(); !isa.ok()) {
    return Fail(std::string(isa.status().message()));
  }
  options.checkpoint_dir = f.checkpoint_dir;
  options.checkpoint_every = f.checkpoint_every;
  options.keep_last = static_cast<int>(f.keep_last);
  options.resume = resume;
  if (options.checkpoint_dir.empty() &&
      (resume || f.checkpoint_every > 0 || f.keep_last > 0)) {
    return Fail(absl::StrCat(resume            ? "--resume"
                             : f.keep_last > 0 ? "--keep-last"
                                               : "--checkpoint-every",
                             " needs --checkpoint-dir=DIR"));
  }
  if (!options.checkpoint_dir.empty() && reference) {
    return Fail(
        "--checkpoint-dir: checkpoints are of the plan, not of "
        "--reference");
  }
  options.epochs = static_cast<int>(f.epochs);
  options.model.batch_size = f.batch;
  options.model.hidden = *hidden;
  options.model.streams = static_cast<int>(streams);
  options.pipelines = f.data == "pipelines";
  options.model.gpu = gpu;
  if (gpu && !reference) {
    // One line rather than the plan's error for every GPU task.
    absl::Status usable = actorflow::cuda::DeviceAvailable(0);
    if (!usable.ok()) {
      return Fail(absl::StrCat("--gpu: no usable GPU: ", usable.message()));
    }
  }
  options.model.seed = static_cast<uint64_t>(f.seed);
  options.model.lr = f.lr;
  options.model.momentum = f.momentum;
  options.model.decay = f.decay;
  options.decay_per_epoch = true;
  options.data_seed = static_cast<uint64_t>(f.seed);
  options.train_limit = f.train_limit;
  options.test_limit = f.test_limit;
  options.data_threads = static_cast<int>(f.threads);
  options.prefetch = static_cast<int>(f.prefetch);
  options.data_dir = f.data_dir;
  const std::string trace_path = f.trace;
  options.trace = !trace_path.empty();

  if (!f.write_plan.empty()) {
    auto plan = actorflow::internal::nn::BuildMlpPlan(options.model);
    if (!plan.ok()) return Fail(std::string(plan.status().message()));
    std::ofstream out(f.write_plan);
    out << plan->DebugString();
    if (!out) {
      return Fail(
          absl::StrCat("--write-plan: cannot write '", f.write_plan, "'"));
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
      actorflow::internal::nn::IsaName(actorflow::internal::nn::DenseIsa()));
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
  auto summary =
      reference
          ? actorflow::internal::examples::TrainSequential(options, report)
          : actorflow::internal::examples::TrainWithPlan(options, report);
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
        actorflow::internal::WriteChromeTrace(summary->trace, trace_path);
    if (!written.ok()) return Fail(std::string(written.message()));
    for (const auto& [stream, share] :
         actorflow::internal::examples::StreamBusyShares(summary->trace)) {
      std::printf("stream %s busy %.1f%%\n", stream.c_str(), 100 * share);
    }
  }
  const EpochReport& last = summary->epochs.back();
  Json line = {{"status", "ok"},
               {"epochs", options.epochs},
               {"test_accuracy", JsonNumber(last.test_accuracy)},
               {"final_loss", JsonNumber(last.train_loss)},
               {"samples_per_s", JsonNumber(summary->samples_per_s)}};
  if (!summary->weights_crc32.empty()) {
    line["weights_crc32"] = summary->weights_crc32;
  }
  if (summary->resumed_from_step >= 0) {
    line["resumed_from_step"] = summary->resumed_from_step;
  }
  PrintJsonLine(line);
  return 0;
}
