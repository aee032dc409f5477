// Training as a plan: the plan's loss curve equals the sequential reference
// loop's bit for bit, whatever the towers, data threads and prefetch; a
// shortened schedule with a fixed seed reaches a stated accuracy.
#include <catch2/catch.hpp>
#include <string>

#include "examples/mnist_mlp/mnist_training.h"
#include "pipeline/dataset.h"
#include "tests/test_util.h"

namespace actorflow::internal::examples {
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
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  // Streams, hidden layers (1 to 3: every way a layer can be split), data
  // read in the plan or fed by pipelines (their threads and prefetch).
  struct Case {
    int streams;
    std::vector<int64_t> hidden;
    bool pipelines;
    int threads, prefetch;
  };
  for (const Case& c :
       {Case{2, {256}, false, 1, 2}, Case{2, {256}, true, 1, 2},
        Case{1, {64}, true, 2, 1}, Case{3, {48, 40}, false, 1, 3},
        Case{2, {40, 32, 24}, true, 1, 3}}) {
    MnistOptions o = Short(seed);
    o.model.streams = c.streams;
    o.model.hidden = c.hidden;
    o.pipelines = c.pipelines;
    o.data_threads = c.threads;
    o.prefetch = c.prefetch;
    o.model.depth = c.prefetch;
    INFO("streams " << c.streams << ", " << c.hidden.size()
                    << " hidden layer(s), "
                    << (c.pipelines ? "pipelines" : "data in the plan")
                    << ", data threads " << c.threads << ", prefetch "
                    << c.prefetch);
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

TEST_CASE("a plan that reads its data runs the schedule run by run",
          "[mnist]") {
  nn::MlpConfig config;
  nn::MlpData data;
  const std::string dir = pipeline::FashionMnistDir();
  data.train_images = dir + "/train-images-idx3-ubyte.gz";
  data.train_labels = dir + "/train-labels-idx1-ubyte.gz";
  data.test_images = dir + "/t10k-images-idx3-ubyte.gz";
  data.test_labels = dir + "/t10k-labels-idx1-ubyte.gz";
  data.train_limit = 200;  // 3 pieces of 64 and one of 8
  data.test_limit = 70;    // one of 64 and one of 6
  data.epochs = 2;
  config.data = data;
  auto trainer = nn::MlpTrainer::Create(config);
  INFO(trainer.status().ToString());
  REQUIRE(trainer.ok());
  nn::MlpTrainer& t = **trainer;
  CHECK(t.schedule().period() == 6);
  CHECK(t.Submit(nullptr, nullptr, 0, true).message() ==
        "trainer: this plan reads its own data (MlpConfig::data): Start it");
  CHECK(t.Start(13).message() ==
        "trainer: 13 pieces asked for, 12 left in "
        "the schedule");
  REQUIRE(t.Start(6).ok());
  auto first = t.Collect();
  REQUIRE(first.ok());
  CHECK(first->train);
  CHECK(first->rows == 64);
  CHECK(t.Start(6).message() ==
        "trainer: collect the last run's pieces first (5 left)");
  std::vector<nn::PieceResult> pieces = {*first};
  for (int i = 1; i < 6; ++i) pieces.push_back(*t.Collect());
  CHECK(pieces[3].rows == 8);
  CHECK(!pieces[4].train);
  CHECK(pieces[4].rows == 64);
  CHECK(pieces[5].rows == 6);
  REQUIRE(t.Start().ok());  // the rest: the second epoch
  REQUIRE(t.Finish().ok());
  CHECK(t.Collect().status().message() == "trainer: every piece collected");
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
  o.model.streams = 0;
  auto bad = TrainWithPlan(o);
  CHECK(bad.status().message() == "MLP config: streams: at least 1");
  o = Short(1);
  o.model.hidden = {256, 2};
  o.model.streams = 3;
  CHECK(TrainWithPlan(o).status().message() ==
        "MLP config: streams: at most the smallest hidden layer's units (2)");
  o = Short(1);
  o.model.hidden = {0};
  o.model.lr = -1;
  CHECK(TrainSequential(o).status().message() ==
        "MLP config: inputs at least 1, at least one hidden layer of at least "
        "1 unit, classes at least 2; lr: above 0");
}

}  // namespace
}  // namespace actorflow::internal::examples
