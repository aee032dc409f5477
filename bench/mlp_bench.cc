// Training samples/s of the MLP on Fashion-MNIST: the plan (its layers split
// over two streams, reading its own data) against the sequential loop of the
// same arithmetic, in the same run, alternating. Each sample trains two
// epochs: the first includes reading and decompressing the IDX files (the
// same serial work in both), the second is the steady state the target is
// about. Prints medians, ratios and each stream's busy share in a traced
// run of the plan.
//   tools/bazel run //bench:mlp_bench -- [--samples=3] [--train-limit=0]
#include <cstdio>

#include "bench/bench_util.h"
#include "examples/mnist_mlp/mnist_training.h"

namespace {

constexpr char kHelp[] =
    R"(Two epochs of 784-256-10 training (each followed by the test set's
evaluation) per sample, alternating the sequential reference loop and the
plan. Prints the medians of --samples runs of training samples/s in
epoch 1 (which includes reading the files) and epoch 2 (the steady state),
and their ratios; the target on 2 cores is the plan at least 1.5x the loop
in the steady state.)";

}  // namespace

int main(int argc, char** argv) {
  using actorflow::internal::examples::MnistOptions;
  int64_t samples = 3, train_limit = 0, towers = 2, batch = 64, spin_ns = 20000;
  actorflow::internal::bench::ParseFlags(
      "mlp_bench", argc, argv,
      {{"samples", &samples, "pairs of runs"},
       {"train-limit", &train_limit,
        "train on the first N samples; 0: all 60000", 0},
       {"streams", &towers, "the plan's CPU streams"},
       {"batch", &batch, "samples per step"},
       {"spin-ns", &spin_ns, "how long an idle stream polls, in ns", 0}},
      kHelp);
  MnistOptions options;
  options.epochs = 2;
  options.train_limit = train_limit;
  options.model.streams = static_cast<int>(towers);
  options.model.batch_size = batch;
  options.model.spin_ns = spin_ns;
  options.model.lr = 0.02;
  // [epoch][run]
  std::vector<double> sequential[2], plan[2];
  for (int64_t i = 0; i < samples; ++i) {
    auto s = actorflow::internal::examples::TrainSequential(options);
    auto p = actorflow::internal::examples::TrainWithPlan(options);
    if (!s.ok() || !p.ok()) {
      std::fprintf(
          stderr, "mlp_bench: %s\n",
          std::string((s.ok() ? p.status() : s.status()).message()).c_str());
      return 1;
    }
    for (int e = 0; e < 2; ++e) {
      sequential[e].push_back(s->epochs[e].samples_per_s);
      plan[e].push_back(p->epochs[e].samples_per_s);
    }
    std::printf(
        "run %lld: epoch 1 sequential %.0f, plan %.0f; epoch 2 sequential "
        "%.0f, plan %.0f samples/s\n",
        static_cast<long long>(i + 1), s->epochs[0].samples_per_s,
        p->epochs[0].samples_per_s, s->epochs[1].samples_per_s,
        p->epochs[1].samples_per_s);
  }
  std::printf("\nmedian of %lld, batch %lld, %lld streams:\n",
              static_cast<long long>(samples), static_cast<long long>(batch),
              static_cast<long long>(towers));
  const char* what[2] = {"epoch 1 (reads the files)", "epoch 2 (steady state)"};
  for (int e = 0; e < 2; ++e) {
    const double seq = actorflow::internal::bench::Median(sequential[e]);
    const double par = actorflow::internal::bench::Median(plan[e]);
    std::printf("  %s:\n", what[e]);
    std::printf("    sequential loop  %8.0f samples/s\n", seq);
    std::printf("    plan             %8.0f samples/s  (%.2fx the loop)\n", par,
                par / seq);
  }
  options.epochs = 1;
  options.trace = true;
  auto traced = actorflow::internal::examples::TrainWithPlan(options);
  if (!traced.ok()) return 1;
  std::printf("busy share per stream (traced run, %.0f samples/s):\n",
              traced->samples_per_s);
  for (const auto& [stream, share] :
       actorflow::internal::examples::StreamBusyShares(traced->trace)) {
    std::printf("  %-12s %5.1f%%\n", stream.c_str(), 100 * share);
  }
  return 0;
}
