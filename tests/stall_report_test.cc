// Pipeline::Stalls: the verdict from two snapshots of the stages' figures
// (exactly, on made-up figures), and on a running image pipeline: a caller
// that takes batches as fast as they come is told the decoding stage holds
// it up; a caller whose own work per batch takes six times as long is told
// input is not the bottleneck. A 5 ms sleep per sample injected into a
// stage chosen at random is named by the verdict within 2 s, 20 of 20 runs.
#include "pipeline/stall_report.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <string>
#include <thread>

#include "actorflow/pipeline.h"
#include "pipeline/fixtures.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

TaskStats Figures(int64_t acts, int64_t busy_ms, int64_t starved_ms,
                  int64_t back_pressured_ms) {
  TaskStats stats;
  stats.acts = acts;
  stats.busy_ns = busy_ms * 1000000;
  stats.input_wait_ns = starved_ms * 1000000;
  stats.output_wait_ns = back_pressured_ms * 1000000;
  return stats;
}

TEST_CASE("the verdict names the busiest stage while the caller waits",
          "[pipeline]") {
  const std::map<std::string, TaskStats> before = {
      {"reader", Figures(10, 10, 0, 50)},
      {"decode@0", Figures(10, 100, 0, 0)},
      {"decode@1", Figures(10, 100, 0, 0)},
      {"batch", Figures(10, 5, 40, 0)}};
  // One second later: both decode threads busy 980 ms, the reader mostly
  // back-pressured, the caller waiting 380 ms of it.
  const std::map<std::string, TaskStats> after = {
      {"reader", Figures(60, 30, 0, 900)},
      {"decode@0", Figures(35, 1080, 10, 0)},
      {"decode@1", Figures(35, 1080, 10, 0)},
      {"batch", Figures(30, 15, 900, 0)}};
  PipelineStalls report =
      ReportStalls(before, after, 1000000000, 20, 640, 380000000);
  CHECK(report.verdict == "input-bound 38 %: decode, 2 of 2 threads busy 98 %");
  CHECK(report.batches_per_s == Approx(20));
  CHECK(report.samples_per_s == Approx(640));
  REQUIRE(report.stages.count("decode") == 1);
  CHECK(report.stages["decode"].threads == 2);
  CHECK(report.stages["decode"].acts == 50);
  // 50 acts of 32 samples (640 samples in 20 batches) in one second.
  CHECK(report.stages["decode"].samples_per_s == Approx(1600));
  CHECK(report.stages["decode"].busy == Approx(0.98));
  CHECK(report.stages["reader"].back_pressured == Approx(0.85));
  CHECK(report.stages["batch"].starved == Approx(0.86));
  // A caller that hardly waits: the pipeline keeps ahead.
  report = ReportStalls(before, after, 1000000000, 20, 640, 20000000);
  CHECK(report.verdict ==
        "input is not the bottleneck: the caller waited 2 % of the time");
  // One busy thread of two, one thread alone.
  std::map<std::string, TaskStats> uneven = after;
  uneven["decode@1"] = Figures(15, 200, 800, 0);
  report = ReportStalls(before, uneven, 1000000000, 20, 640, 500000000);
  CHECK(report.verdict == "input-bound 50 %: decode, 1 of 2 threads busy 54 %");
  report = ReportStalls({}, {{"reader", Figures(5, 900, 0, 0)}}, 1000000000, 5,
                        5, 600000000);
  CHECK(report.verdict == "input-bound 60 %: reader, 1 of 1 thread busy 90 %");
  CHECK(ReportStalls(before, before, 1000000000, 0, 0, 0).verdict ==
        "no batch was asked for in the window");
}

// A pipeline of batch 4 on 2 threads whose images come from file_reader
// over `dir` and decode_resize ("decode") to `side` x `side`, as `images`.
std::unique_ptr<Pipeline> DecodeInto(const std::string& dir, int side,
                                     const std::string& images) {
  PipelineOptions options;
  options.batch_size = 4;
  options.num_threads = 2;
  auto pipe = std::make_unique<Pipeline>(options);
  pipe->Add(OperatorDef{.op = "file_reader",
                        .outputs = {"files"},
                        .attrs = {{"dir", StringAttr(dir)}}});
  pipe->Add(OperatorDef{.op = "decode_resize",
                        .name = "decode",
                        .inputs = {"files"},
                        .outputs = {images},
                        .attrs = {{"size", IntListAttr({side, side})}}});
  return pipe;
}

// file_reader -> decode_resize to 200 x 200 (2 threads) over 128 images
// of 256 px: 32 batches an epoch, so that the figures below come from
// one epoch (a new one starts without batches made ahead).
std::unique_ptr<Pipeline> DecodingPipeline(const std::string& dir) {
  auto pipe = DecodeInto(dir, 200, "images");
  pipe->SetOutputs({"images"});
  return pipe;
}

constexpr int kAhead = 2;  // Run()s ahead of the batches taken

// Schedules kAhead batches: the pipeline works ahead of the caller.
void Prime(Pipeline* pipe) {
  for (int i = 0; i < kAhead; ++i) REQUIRE(pipe->Run().ok());
}

// Takes `batches` batches, spending `work` on each as a trainer's step
// would, and keeps kAhead scheduled (a new epoch when one ends).
void Take(Pipeline* pipe, int batches, std::chrono::milliseconds work) {
  for (int i = 0; i < batches; ++i) {
    auto out = pipe->Outputs();
    if (absl::IsOutOfRange(out.status())) {
      REQUIRE(pipe->Reset().ok());
      Prime(pipe);
      out = pipe->Outputs();
    }
    REQUIRE(out.ok());
    REQUIRE(pipe->Run().ok());
    if (work.count() > 0) std::this_thread::sleep_for(work);  // the step
  }
}

TEST_CASE("a running pipeline says where it stalls", "[pipeline]") {
  const std::string dir = testing::TestTempDir("stall_images");
  REQUIRE(WriteFashionImages(dir, 128, 256, 0).ok());
  auto pipe = DecodingPipeline(dir);
  REQUIRE_OK(pipe->Build());
  Prime(pipe.get());
  Take(pipe.get(), 2, std::chrono::milliseconds(0));  // warm up
  REQUIRE(pipe->Stalls().ok());
  // As fast as batches come: the decoding holds the caller up.
  Take(pipe.get(), 12, std::chrono::milliseconds(0));
  absl::StatusOr<PipelineStalls> hungry = pipe->Stalls();
  REQUIRE(hungry.ok());
  INFO(hungry->verdict);
  CHECK(hungry->batches == 12);
  CHECK(hungry->verdict.rfind("input-bound ", 0) == 0);
  CHECK(hungry->verdict.find(": decode, ") != std::string::npos);
  CHECK(hungry->stages.at("decode").threads == 2);
  // Its registers hold decoded samples (200 x 200 x 3 bytes, 4 a batch)
  // for at least one batch, and no more than its registers' count allows.
  const int64_t decoded = hungry->stages.at("decode").register_bytes;
  CHECK(decoded >= 4 * 200 * 200 * 3);
  CHECK(decoded <= 2 * 16 * 4 * 200 * 200 * 3);
  // The batching stage's registers are the batches themselves.
  REQUIRE(hungry->stages.count("batch") == 1);
  CHECK(hungry->stages.at("batch").register_bytes >= 4 * 200 * 200 * 3);
  // A trainer whose step takes six times what a batch took to make (at
  // least 20 ms; longer on a slow or instrumented build): the pipeline
  // keeps ahead.
  const auto step = std::chrono::milliseconds(std::max<int64_t>(
      20, static_cast<int64_t>(6 * hungry->window_ms / hungry->batches)));
  Take(pipe.get(), 12, step);
  absl::StatusOr<PipelineStalls> fed = pipe->Stalls();
  REQUIRE(fed.ok());
  INFO(fed->verdict);
  CHECK(fed->verdict.rfind("input is not the bottleneck", 0) == 0);
  CHECK(fed->caller_wait < 0.05);
}

// file_reader -> decode_resize to 64 x 64 ("decode") -> flip ("flip"),
// both outputs fetched, so each is a stage of its own (2 threads each); a
// sleep of `ms` per sample fused into the end of the chosen one.
std::unique_ptr<Pipeline> TwoStagePipeline(const std::string& dir,
                                           const std::string& slow, int ms) {
  auto pipe = DecodeInto(dir, 64, slow == "decode" ? "decoded" : "images");
  auto sleep = [&](const std::string& in, const std::string& out) {
    pipe->Add(OperatorDef{.op = "sleep",
                          .name = "sleep",
                          .inputs = {in},
                          .outputs = {out},
                          .attrs = {{"ms", IntAttr(ms)}}});
  };
  if (slow == "decode") sleep("decoded", "images");
  pipe->Add(OperatorDef{.op = "flip",
                        .name = "flip",
                        .inputs = {"images"},
                        .outputs = {slow == "flip" ? "flipped0" : "flipped"}});
  if (slow == "flip") sleep("flipped0", "flipped");
  pipe->SetOutputs({"images", "flipped"});
  return pipe;
}

TEST_CASE("a 5 ms sleep injected into a chosen stage is named within 2 s",
          "[pipeline]") {
  const uint64_t seed = testing::TestSeed("injected stall");
  std::mt19937_64 rng(seed);
  const std::string dir = testing::TestTempDir("injected_stall");
  REQUIRE(WriteFashionImages(dir, 256, 64, 0).ok());
  for (int run = 0; run < 20; ++run) {
    const std::string slow = rng() % 2 == 0 ? "decode" : "flip";
    INFO("seed " << seed << " (ACTORFLOW_SEED replays it), run " << run
                 << ": the sleep is in " << slow);
    auto pipe = TwoStagePipeline(dir, slow, 5);
    REQUIRE_OK(pipe->Build());
    Prime(pipe.get());
    Take(pipe.get(), 2, std::chrono::milliseconds(0));
    REQUIRE(pipe->Stalls().ok());  // the windows start here
    const auto started = std::chrono::steady_clock::now();
    std::string verdict;
    bool named = false;
    while (!named && std::chrono::steady_clock::now() - started <
                         std::chrono::seconds(2)) {
      Take(pipe.get(), 8, std::chrono::milliseconds(0));
      absl::StatusOr<PipelineStalls> report = pipe->Stalls();
      REQUIRE(report.ok());
      verdict = report->verdict;
      named = verdict.find(": " + slow + "+sleep, ") != std::string::npos;
    }
    INFO("last verdict: " << verdict);
    CHECK(named);
  }
}

}  // namespace
}  // namespace actorflow::internal::pipeline
