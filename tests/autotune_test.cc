// The pipeline tuner (PipelineOptions::autotune): its search on made-up
// figures (the fastest wins, the cheapest of near equals, the memory budget
// holds), and on running pipelines, that tuning never changes a batch: the
// tuned pipeline, rebuilt at new thread counts and depths mid-epoch, hands
// out the untuned one's batches bit for bit, elastic or not, with skips.
#include "pipeline/autotune.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/pipeline.h"
#include "pipeline/fixtures.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

using testing::TestTempDir;

// Runs a tuner on rate(threads, depth) until it settles; returns the
// trials it took.
int Settle(Autotuner* tuner, const std::function<double(int, int)>& rate,
           const std::function<int64_t(int, int)>& memory = {}) {
  int trials = 0;
  while (!tuner->settled() && trials < 50) {
    const int t = tuner->threads(), d = tuner->depth();
    tuner->Record(rate(t, d), memory ? memory(t, d) : 0);
    ++trials;
  }
  return trials;
}

TEST_CASE("autotune: the fastest configuration wins") {
  // Decoding-bound on 3 cores: 3 threads best, depth 3 a little better.
  Autotuner tuner(/*cpus=*/4, /*memory_budget=*/0, 1, 2);
  const int trials = Settle(&tuner, [](int t, int d) {
    const double threads = t <= 3 ? t * 100.0 : 280.0;
    return threads * (d == 1 ? 0.8 : d == 3 ? 1.1 : 1.0);
  });
  CHECK(tuner.settled());
  CHECK(tuner.threads() == 3);
  CHECK(tuner.depth() == 3);
  CHECK(trials <= 9);                          // 4 counts, then a few depths
  CHECK(tuner.trials().front().threads == 1);  // where it started
}

TEST_CASE("autotune: of configurations within 3 %, the cheapest") {
  // A slow caller: every configuration gives what it takes.
  Autotuner tuner(4, 0, 2, 2);
  Settle(&tuner, [](int t, int d) { return 500.0 + t + d; });
  CHECK(tuner.threads() == 1);
  CHECK(tuner.depth() == 1);
}

TEST_CASE("autotune: nothing predicted over the memory budget is tried") {
  // 10 MB per thread and register; a budget of 100 MB.
  const auto memory = [](int t, int d) {
    return int64_t{10'000'000} * t * (d + 1);
  };
  Autotuner tuner(8, 100'000'000, 1, 2);
  Settle(
      &tuner, [](int t, int d) { return 100.0 * t + d; }, memory);
  for (const AutotuneTrial& trial : tuner.trials()) {
    INFO(trial.threads << " threads, depth " << trial.depth);
    CHECK(trial.memory_bytes <= 100'000'000);
  }
  CHECK(tuner.threads() * (tuner.depth() + 1) <= 10);
  CHECK(tuner.threads() == 3);  // 3 x (2 + 1) = 9 fits, 4 x 3 does not
}

// file_reader (optionally elastic) -> decode -> random crop -> flip, batch
// 8: 40 batches an epoch over the directory's 320 images (3 corrupt).
// It starts at 1 thread and depth 1.
std::unique_ptr<Pipeline> Augmenting(const std::string& dir, bool tune,
                                     bool elastic) {
  PipelineOptions options;
  options.batch_size = 8;
  options.num_threads = 1;
  options.prefetch_depth = 1;
  options.seed = 4;
  options.on_error = OnError::kSkipSample;
  options.autotune = tune;
  options.autotune_cpus = 3;
  auto pipe = std::make_unique<Pipeline>(options);
  pipe->Add(OperatorDef{.op = "file_reader",
                        .outputs = {"files", "labels"},
                        .attrs = {{"dir", StringAttr(dir)},
                                  {"shuffle_window", IntAttr(32)},
                                  {"elastic", BoolAttr(elastic)}}});
  pipe->Add(OperatorDef{.op = "decode_random_crop",
                        .inputs = {"files"},
                        .outputs = {"crops"},
                        .attrs = {{"size", IntListAttr({24, 24})}}});
  pipe->Add(OperatorDef{.op = "flip",
                        .inputs = {"crops"},
                        .outputs = {"images"},
                        .attrs = {{"horizontal", FloatAttr(0.5)}}});
  pipe->SetOutputs({"images", "labels"});
  REQUIRE_OK(pipe->Build());
  return pipe;
}

// Appends the bytes of epoch `epoch`'s batches to `batches`, as a
// training loop takes them (a Reset before every epoch but the first).
void TakeEpoch(Pipeline* pipe, int epoch, std::vector<std::string>* batches) {
  if (epoch > 0) REQUIRE_OK(pipe->Reset());
  REQUIRE_OK(pipe->Run());
  while (true) {
    auto out = pipe->Outputs();
    if (absl::IsOutOfRange(out.status())) break;
    REQUIRE_OK(out.status());
    std::string bytes;
    for (const OutputView& o : out->outputs) {
      bytes.append(static_cast<const char*>(o.data().raw_data()),
                   o.data().byte_size());
    }
    batches->push_back(std::move(bytes));
    REQUIRE_OK(pipe->Run());
  }
}

TEST_CASE("autotune: a tuned pipeline hands out the untuned one's batches") {
  const std::string dir = TestTempDir("autotune_images");
  REQUIRE_OK(WriteFashionImages(dir, 317, 32, /*corrupt=*/3));
  for (bool elastic : {false, true}) {
    INFO((elastic ? "elastic" : "not elastic"));
    // The tuner must move, so that the rebuild at a cut runs at least
    // once. Its windows last at least 50 ms, so how many epochs that takes
    // depends on the machine's speed: at least 10, on until it tried a
    // second configuration, at most 1000.
    auto tuned = Augmenting(dir, /*tune=*/true, elastic);
    std::vector<std::string> got;
    int epochs = 0;
    while (epochs < 10 ||
           (tuned->Autotune().trials.size() < 2 && epochs < 1000)) {
      TakeEpoch(tuned.get(), epochs++, &got);
    }
    const AutotuneReport report = tuned->Autotune();
    REQUIRE_OK(tuned->Finish());
    auto plain = Augmenting(dir, /*tune=*/false, elastic);
    std::vector<std::string> want;
    for (int e = 0; e < epochs; ++e) TakeEpoch(plain.get(), e, &want);
    REQUIRE_OK(plain->Finish());
    INFO(epochs << " epochs");
    REQUIRE(got.size() == want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      INFO("batch " << i);
      REQUIRE(got[i] == want[i]);
    }
    CHECK(report.enabled);
    CHECK(report.trials.size() >= 2);
    CHECK(tuned->skipped().size() == static_cast<size_t>(epochs) * 3);
    for (const AutotuneTrial& t : report.trials) {
      std::printf("%s: %d threads, depth %d: %.0f images/s, %lld bytes\n",
                  elastic ? "elastic" : "plain", t.threads, t.depth,
                  t.images_per_s, static_cast<long long>(t.memory_bytes));
    }
  }
}

}  // namespace
}  // namespace actorflow::internal::pipeline
