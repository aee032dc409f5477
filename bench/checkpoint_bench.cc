// What checkpoints cost the MLP's training on Fashion-MNIST: training
// samples/s with a checkpoint every 500 steps against none, in the same
// run, alternating which goes first; and one checkpoint's bytes, the pause
// it puts into training (the snapshot at the cut) and the time to write and
// sync it (on a thread beside training). Both runs must end with the same
// weights (checkpoints never change results).
//   tools/bazel run //bench:checkpoint_bench -- [--samples=5] [--every=500]
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/bench_util.h"
#include "examples/mnist_mlp/mnist_training.h"

namespace {

constexpr char kHelp[] =
    R"(Per sample, two trainings of the 784-256-10 MLP (2 streams, batch 64) for
--epochs epochs, one without checkpoints and one with a checkpoint
every --every training steps under $TMPDIR (or /tmp), in alternating
order. Prints the medians of --samples of the steady-state training
rate (epochs 2 on, where the files are read already) and the median of the
per-pair ratios with their spread (the target: at most 3 % slower, a ratio
of at least 0.97), and what one checkpoint costs: its bytes, how long the
streams were held up taking it, the write and sync beside the training and
the CPU time that took, and from those the share of the training's time
between two checkpoints that checkpoints take.)";

using actorflow::internal::examples::MnistOptions;
using actorflow::internal::examples::TrainSummary;

// Training samples per second of training time over epochs 2 on.
double SteadyRate(const TrainSummary& summary) {
  double samples = 0, seconds = 0;
  for (size_t e = 1; e < summary.epochs.size(); ++e) {
    samples += static_cast<double>(summary.epochs[e].train_samples);
    seconds += summary.epochs[e].train_seconds;
  }
  return seconds > 0 ? samples / seconds : 0;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t samples = 11, every = 500, epochs = 3;
  actorflow::internal::bench::ParseFlags(
      "checkpoint_bench", argc, argv,
      {{"samples", &samples, "pairs of trainings"},
       {"every", &every, "training steps between two checkpoints"},
       {"epochs", &epochs, "epochs per training (at least 2)", 2}},
      kHelp);
  const char* tmp = std::getenv("TMPDIR");
  const std::string dir = std::string(tmp != nullptr ? tmp : "/tmp") +
                          "/checkpoint_bench." + std::to_string(getpid());
  MnistOptions plain;
  plain.epochs = static_cast<int>(epochs);
  plain.model.lr = 0.02;
  MnistOptions saving = plain;
  saving.checkpoint_dir = dir;
  saving.checkpoint_every = every;
  saving.keep_last = 2;

  std::vector<double> without, with, ratios, pause_ms, write_ms, cpu_ms;
  int64_t bytes = 0, checkpoints = 0;
  bool same = true;
  for (int64_t i = 0; i < samples; ++i) {
    std::filesystem::remove_all(dir);
    absl::StatusOr<TrainSummary> a, b;
    if (i % 2 == 0) {
      a = actorflow::internal::examples::TrainWithPlan(plain);
      b = actorflow::internal::examples::TrainWithPlan(saving);
    } else {
      b = actorflow::internal::examples::TrainWithPlan(saving);
      a = actorflow::internal::examples::TrainWithPlan(plain);
    }
    if (!a.ok() || !b.ok()) {
      std::fprintf(
          stderr, "checkpoint_bench: %s\n",
          std::string((a.ok() ? b.status() : a.status()).message()).c_str());
      return 1;
    }
    same &= a->weights_crc32 == b->weights_crc32 &&
            a->epochs.back().train_loss == b->epochs.back().train_loss;
    without.push_back(SteadyRate(*a));
    with.push_back(SteadyRate(*b));
    ratios.push_back(with.back() / without.back());
    pause_ms.push_back(b->checkpoint_pause_ms);
    write_ms.push_back(b->checkpoint_write_ms);
    cpu_ms.push_back(b->checkpoint_cpu_ms);
    bytes = b->checkpoint_bytes;
    checkpoints = b->checkpoints;
    std::printf(
        "sample %lld: none %.0f, every %lld steps %.0f samples/s (%.3fx); "
        "%lld checkpoints, pause %.2f ms, write %.2f ms\n",
        static_cast<long long>(i + 1), without.back(),
        static_cast<long long>(every), with.back(), ratios.back(),
        static_cast<long long>(checkpoints), pause_ms.back(), write_ms.back());
  }
  std::filesystem::remove_all(dir);
  using actorflow::internal::bench::Median;
  const double ratio = Median(ratios);
  std::printf("\nmedian of %lld (epochs 2-%lld, 2 streams, batch 64):\n",
              static_cast<long long>(samples), static_cast<long long>(epochs));
  std::printf("  no checkpoints          %8.0f samples/s\n", Median(without));
  std::printf(
      "  one every %5lld steps   %8.0f samples/s  (%.3fx, pairs %.3f..%.3f: "
      "%s)\n",
      static_cast<long long>(every), Median(with), ratio,
      *std::min_element(ratios.begin(), ratios.end()),
      *std::max_element(ratios.begin(), ratios.end()),
      ratio >= 0.97 ? "within the 3 % target" : "MISSES the 3 % target");
  // The interval between two checkpoints, in training time without them.
  const double interval_ms =
      1e3 * static_cast<double>(every) * 64 / std::max(Median(without), 1.0);
  const double taken_ms = Median(pause_ms) + Median(cpu_ms);
  std::printf(
      "  one checkpoint: %lld bytes of state; the streams held up %.2f ms; "
      "written and synced in %.2f ms beside them, %.2f ms of CPU\n",
      static_cast<long long>(bytes), Median(pause_ms), Median(write_ms),
      Median(cpu_ms));
  // The kernel's own deferred work for the files (writeback, journal) is in
  // neither figure; the end-to-end ratio above has it.
  std::printf(
      "  held up plus writing: %.2f ms of CPU per %.0f ms of training between "
      "two checkpoints (%.2f %%)\n",
      taken_ms, interval_ms, 100 * taken_ms / interval_ms);
  std::printf("  weights and loss with checkpoints: %s\n",
              same ? "identical to without" : "DIFFERENT");
  return same ? 0 : 1;
}
