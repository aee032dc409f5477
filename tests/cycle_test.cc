// Cycles through initial registers (RegisterDescProto.initial_register): what
// validation accepts and refuses, how pieces line up around the cycle, runs
// after runs, failures and empty runs.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actorflow/plan_validator.h"
#include "actorflow/session.h"
#include "nn/dense_math.h"
#include "plan/plan_builder.h"
#include "plan/plan_writer.h"
#include "tests/cli_util.h"

namespace actorflow::internal {
namespace {

constexpr int64_t kWidth = 4;

struct CycleIds {
  int64_t weights = 0;  // the variable's output (initial)
  int64_t delta = 0;    // the adder's output, back to the variable
};

// w (variable, stream 0) -> step (add w + x, stream 1) -> back to w; a feed
// of x and a fetch of w on stream 2. So w[p + 1] = w[p] + (w[p] + x[p]).
Plan CyclePlan(CycleIds* ids = nullptr, const std::string& step_op = "add") {
  PlanWriter w;
  TaskProto* var = w.AddTask("w", "variable", CpuStream(0));
  (*var->mutable_kernel()->mutable_attr())["init"] = StringAttr("uniform");
  (*var->mutable_kernel()->mutable_attr())["scale"] = FloatAttr(1.0);
  (*var->mutable_kernel()->mutable_attr())["seed"] = IntAttr(7);
  const int64_t weights =
      w.AddOutput(var, "out", 1, false, {BlobProto("w", DT_FLOAT32, {kWidth})});
  w.Desc(weights).set_initial_register(true);
  TaskProto* feed = w.AddTask("x", "feed", CpuStream(2));
  const int64_t x = w.AddOutput(feed, "out", 2, false,
                                {BlobProto("x", DT_FLOAT32, {kWidth})});
  TaskProto* step = w.AddTask("step", step_op, CpuStream(1));
  if (step_op == "fail") {
    // The fed input comes in through `mix` (w + x): a cycle that nothing
    // outside drives is refused before it runs.
    (*step->mutable_kernel()->mutable_attr())["at_piece"] = IntAttr(3);
    TaskProto* mix = w.AddTask("mix", "add", CpuStream(1));
    w.Consume(mix, "in", weights);
    w.Consume(mix, "in", x);
    w.Consume(step, "in", w.AddOutput(mix, "out", 1, false));
  } else {
    w.Consume(step, "in", weights);
    w.Consume(step, "in", x);
  }
  const int64_t delta = w.AddOutput(step, "out", 1, false);
  w.Consume(var, "delta", delta);
  TaskProto* fetch = w.AddTask("fetch_w", "fetch", CpuStream(2));
  w.Consume(fetch, "in", weights);
  if (ids != nullptr) *ids = {weights, delta};
  return w.plan();
}

std::vector<float> Initial() {
  std::vector<float> w(kWidth);
  REQUIRE(nn::InitWeights("uniform", 1.0, 7, kWidth, w.data()).ok());
  return w;
}

std::vector<float> X(int64_t piece) {
  std::vector<float> x(kWidth);
  for (int64_t i = 0; i < kWidth; ++i) x[i] = 0.25f * piece - 0.5f * i;
  return x;
}

std::vector<float> Fetched(Session* session) {
  auto t = session->Fetch("fetch_w");
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  auto values = t->data<float>();
  REQUIRE(values.ok());
  return std::vector<float>(values->begin(), values->end());
}

std::string Problems(const Plan& plan) {
  return absl::StrJoin(ValidatePlan(plan), "\n");
}

TEST_CASE("a cycle through an initial register runs piece by piece",
          "[cycle]") {
  auto session = Session::Create(CyclePlan());
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  std::vector<float> w = Initial();
  int64_t piece = 0;
  // Two runs: the second starts from where the first ended.
  for (int run = 0; run < 2; ++run) {
    const int pieces = run == 0 ? 5 : 3;
    // A run starts at its first Feed. Its first piece of w is what the last
    // run ended with (the initial weights in the first).
    for (int p = 0; p < pieces; ++p, ++piece) {
      auto x = Tensor::FromValues<float>({kWidth}, X(piece));
      REQUIRE((*session)->Feed("x", *x).ok());
      CHECK(Fetched(session->get()) == w);
      const std::vector<float> in = X(piece);
      for (int64_t i = 0; i < kWidth; ++i) w[i] = w[i] + (w[i] + in[i]);
    }
    // The variable's last act makes one piece more: the run's result.
    CHECK(Fetched(session->get()) == w);
    REQUIRE((*session)->CloseFeeds().ok());
    auto end = (*session)->Fetch("fetch_w");
    CHECK(absl::IsOutOfRange(end.status()));
    auto stats = (*session)->Wait();
    INFO(stats.status().ToString());
    REQUIRE(stats.ok());
    CHECK(stats->pieces == pieces);
  }
}

TEST_CASE("a run with no piece still ends", "[cycle]") {
  auto session = Session::Create(CyclePlan());
  REQUIRE(session.ok());
  REQUIRE((*session)->CloseFeeds().ok());
  // The initial register may or may not have gone out before the end; if
  // it did, it holds the initial weights.
  while (true) {
    auto t = (*session)->Fetch("fetch_w");
    if (absl::IsOutOfRange(t.status())) break;
    REQUIRE(t.ok());
    auto values = t->data<float>();
    CHECK(std::vector<float>(values->begin(), values->end()) == Initial());
  }
  CHECK((*session)->Wait().ok());
}

TEST_CASE("a failure inside the cycle stops the run", "[cycle]") {
  auto session = Session::Create(CyclePlan(nullptr, "fail"));
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  absl::Status status;
  for (int p = 0; p < 10 && status.ok(); ++p) {
    auto x = Tensor::FromValues<float>({kWidth}, X(p));
    status = (*session)->Feed("x", *x);
    if (status.ok()) status = (*session)->Fetch("fetch_w").status();
  }
  if (status.ok()) status = (*session)->CloseFeeds();
  if (status.ok()) status = (*session)->Wait().status();
  INFO(status.ToString());
  CHECK(testing::Contains(std::string(status.message()),
                          "task 'step' (task_id 3) failed at piece 3"));
}

// Variables outside the cycle that read its steps: each on a thread of its
// own, listed last, so the step often reaches one before the runtime's
// kStart does. Each must publish its initial register first and then act
// on every step: all of them hold the same weights, piece for piece.
TEST_CASE("an input that arrives before kStart waits for the initial one",
          "[cycle]") {
  constexpr int kFollowers = 6;
  constexpr int kPieces = 2;
  constexpr int kRuns = 60;  // w doubles each piece: 2^120 fits a float
  PlanWriter w;
  TaskProto* x = w.AddTask("x", "source", CpuStream(0));
  const int64_t xs =
      w.AddOutput(x, "out", 2, false, {BlobProto("x", DT_FLOAT32, {kWidth})});
  TaskProto* step = w.AddTask("step", "add", CpuStream(0));
  std::vector<TaskProto*> vars;
  std::vector<int64_t> weights;
  for (int k = 0; k <= kFollowers; ++k) {
    TaskProto* var = w.AddTask(absl::StrCat("w", k), "variable",
                               CpuStream(k == 0 ? 0 : k + 1));
    (*var->mutable_kernel()->mutable_attr())["init"] = StringAttr("zeros");
    weights.push_back(w.AddOutput(var, "out", 1, false,
                                  {BlobProto("w", DT_FLOAT32, {kWidth})}));
    w.Desc(weights.back()).set_initial_register(true);
    vars.push_back(var);
  }
  w.Consume(step, "in", weights[0]);
  w.Consume(step, "in", xs);
  const int64_t delta = w.AddOutput(step, "out", 1, false);
  for (int k = 0; k <= kFollowers; ++k) {
    w.Consume(vars[k], "delta", delta);
    TaskProto* sink = w.AddTask(absl::StrCat("sink", k), "checksum",
                                CpuStream(k == 0 ? 1 : k + 1));
    w.Consume(sink, "in", weights[k]);
  }
  auto session = Session::Create(w.plan());
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  for (int run = 0; run < kRuns; ++run) {
    auto stats = (*session)->Run(kPieces);
    INFO("run " << run << ": " << stats.status().ToString());
    REQUIRE(stats.ok());
  }
  // Each run publishes w, then w(p + 1) = w(p) + (w(p) + p) per piece p
  // (the source's value), in float32 as the kernels add; the sinks sum
  // kWidth equal elements per piece.
  float weight = 0;
  double expected = 0;
  for (int64_t piece = 0, run = 0; run < kRuns; ++run) {
    expected += kWidth * static_cast<double>(weight);
    for (int p = 0; p < kPieces; ++p, ++piece) {
      const float delta = weight + static_cast<float>(piece);
      weight = weight + delta;
      expected += kWidth * static_cast<double>(weight);
    }
  }
  const auto sinks = (*session)->Sinks();
  for (int k = 0; k <= kFollowers; ++k) {
    INFO("sink" << k);
    const SinkSummary& sink = sinks.at(absl::StrCat("sink", k));
    CHECK(sink.pieces == kRuns * (kPieces + 1));
    CHECK(sink.checksum == expected);
  }
}

TEST_CASE("validation: cycles need an initial register", "[cycle]") {
  CycleIds ids;
  Plan plan = CyclePlan(&ids);
  REQUIRE(Problems(plan).empty());

  SECTION("without it, the cycle's tasks are named") {
    plan.mutable_task(0)
        ->mutable_produced_regst_desc()
        ->at("out")
        .set_initial_register(false);
    CHECK(Problems(plan) ==
          "plan: cycle: 'w' -> 'step' -> 'w' (each waits on the one before "
          "it; a cycle needs an initial register on one of its edges)");
  }
  SECTION("its blobs must be stated") {
    plan.mutable_task(0)->mutable_produced_regst_desc()->at("out").clear_blob();
    CHECK(testing::Contains(Problems(plan),
                            "task 'w' (task_id 1): produced_regst_desc['out'] "
                            "(regst_desc 101).initial_register: state the "
                            "register's blobs"));
  }
  SECTION("its producer must consume something") {
    // The feed's register made initial.
    plan.mutable_task(1)
        ->mutable_produced_regst_desc()
        ->at("out")
        .set_initial_register(true);
    CHECK(testing::Contains(Problems(plan),
                            "task 'x' (task_id 2): produced_regst_desc['out'] "
                            "(regst_desc 201).initial_register: a task with an "
                            "initial register must consume something"));
  }
  SECTION("every register of its producer is initial") {
    Plan two = plan;
    RegisterDescProto& extra =
        (*two.mutable_task(0)->mutable_produced_regst_desc())["more"];
    extra.set_regst_desc_id(150);
    extra.set_producer_task_id(1);
    extra.set_register_num(1);
    CHECK(testing::Contains(Problems(two),
                            "either every produced register is "
                            "initial or none is"));
  }
  SECTION("a kernel without InitialOutput fails the run, named") {
    plan.mutable_task(0)->mutable_kernel()->set_op_type("identity");
    plan.mutable_task(0)->mutable_kernel()->mutable_attr()->clear();
    (*plan.mutable_task(0)->mutable_consumed_regst_desc_id())["in"] =
        plan.task(0).consumed_regst_desc_id().at("delta");
    plan.mutable_task(0)->mutable_consumed_regst_desc_id()->erase("delta");
    auto session = Session::Create(plan);
    INFO(session.status().ToString());
    REQUIRE(session.ok());
    auto x = Tensor::FromValues<float>({kWidth}, X(0));
    absl::Status status = (*session)->Feed("x", *x);
    if (status.ok()) status = (*session)->Fetch("fetch_w").status();
    if (status.ok()) status = (*session)->CloseFeeds();
    if (status.ok()) status = (*session)->Wait().status();
    CHECK(testing::Contains(std::string(status.message()),
                            "task 'w' (task_id 1) failed at piece 0: initial "
                            "register: this kernel cannot fill an initial "
                            "register"));
  }
}

}  // namespace
}  // namespace actorflow::internal
