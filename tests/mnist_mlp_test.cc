// Training as a plan: the plan's loss curve equals the sequential reference
// loop's bit for bit, whatever the towers, data threads and prefetch; a
// shortened schedule with a fixed seed reaches a stated accuracy.
#include <catch2/catch.hpp>
#include <string>

#include "examples/mnist_mlp/mnist_training.h"
#include "tests/test_util.h"

namespace actorflow::examples {
namespace {

MnistOptions Short(uint64_t seed) {
  MnistOptions o;
  o.epochs = 2;
  o.train_limit = 2000;  // 31 full batches and one of 16
  o.test_limit = 700;
  o.model.seed = seed;
  o.data_seed = seed;
  o.model.lr = 0.02;
  o.model.decay = 0.2;
  o.decay_per_epoch = true;
  return o;
}

void RequireSame(const TrainSummary& plan, const TrainSummary& reference) {
  REQUIRE(plan.pieces.size() == reference.pieces.size());
  for (size_t i = 0; i < plan.pieces.size(); ++i) {
    INFO("piece " << i << ": plan loss " << plan.pieces[i].loss_sum
                  << ", reference " << reference.pieces[i].loss_sum);
    REQUIRE(plan.pieces[i] == reference.pieces[i]);
  }
  REQUIRE(plan.epochs.size() == reference.epochs.size());
  for (size_t e = 0; e < plan.epochs.size(); ++e) {
    CHECK(plan.epochs[e].train_loss == reference.epochs[e].train_loss);
    CHECK(plan.epochs[e].test_accuracy == reference.epochs[e].test_accuracy);
  }
}

TEST_CASE("the plan reproduces the sequential loop bit for bit", "[mnist]") {
  const uint64_t seed = testing::TestSeed("mnist_mlp");
  INFO("seed " << seed << " (ACTORFLOW_TEST_SEED replays it)");
  for (const auto& [towers, threads, prefetch] :
       {std::tuple{2, 1, 2}, std::tuple{1, 2, 1}, std::tuple{3, 1, 3}}) {
    MnistOptions o = Short(seed);
    o.model.towers = towers;
    o.data_threads = threads;
    o.prefetch = prefetch;
    o.model.depth = prefetch;
    INFO("towers " << towers << ", data threads " << threads << ", prefetch "
                   << prefetch);
    auto reference = TrainSequential(o);
    INFO(reference.status().ToString());
    REQUIRE(reference.ok());
    auto plan = TrainWithPlan(o);
    INFO(plan.status().ToString());
    REQUIRE(plan.ok());
    RequireSame(*plan, *reference);
    // Every piece counted: 32 training and 11 evaluation pieces an epoch.
    CHECK(plan->pieces.size() == 2 * (32 + 11));
    CHECK(plan->epochs[1].train_samples == 2000);
    CHECK(plan->epochs[1].test_samples == 700);
  }
}

TEST_CASE("a shortened schedule learns Fashion-MNIST", "[mnist]") {
  // Seed 1, one epoch of 12800 samples, evaluated on 2000: stated threshold
  // 78% test accuracy (this build measured 81.9%; chance is 10%).
  MnistOptions o;
  o.epochs = 1;
  o.train_limit = 12800;
  o.test_limit = 2000;
  o.model.lr = 0.02;
  auto summary = TrainWithPlan(o);
  INFO(summary.status().ToString());
  REQUIRE(summary.ok());
  const EpochReport& e = summary->epochs.back();
  INFO("test accuracy " << e.test_accuracy << ", train loss " << e.train_loss);
  CHECK(e.test_accuracy >= 0.78);
  CHECK(e.train_loss < 1.0);
  CHECK(e.samples_per_s > 0);
}

TEST_CASE("bad data and settings are errors, not crashes", "[mnist]") {
  MnistOptions o = Short(1);
  o.data_dir = "/nonexistent/fashion";
  auto missing = TrainWithPlan(o);
  CHECK(!missing.ok());
  CHECK(std::string(missing.status().message())
            .find("/nonexistent/fashion/train-images-idx3-ubyte.gz") !=
        std::string::npos);
  o = Short(1);
  o.model.towers = 0;
  auto bad = TrainWithPlan(o);
  CHECK(bad.status().message() == "MLP config: towers: from 1 to batch_size");
  o = Short(1);
  o.model.hidden = 0;
  o.model.lr = -1;
  CHECK(TrainSequential(o).status().message() ==
        "MLP config: inputs and hidden at least 1, classes at least 2; lr: "
        "above 0");
}

}  // namespace
}  // namespace actorflow::examples
