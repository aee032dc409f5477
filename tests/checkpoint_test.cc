// Checkpoints: the format on disk (round trip, pruning, every kind of damage
// named), the plan check, and sessions taken at a cut and restored: the
// pieces after a restore are bit for bit those of a session never stopped,
// whatever the cut, for the training plan, bound kernels and feeds; a busy
// session's checkpoint waits for the cut, within its bound.
#include "actorflow/checkpoint.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "actorflow/session.h"
#include "nn/mlp.h"
#include "plan/plan_builder.h"
#include "plan/plan_signature.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

namespace fs = std::filesystem;

std::string Message(const absl::Status& status) {
  return std::string(status.message());
}

Plan MustBuild(const std::vector<TaskDef>& tasks, int64_t pieces) {
  auto plan = BuildPlan(tasks, pieces);
  REQUIRE(plan.ok());
  return *plan;
}

std::unique_ptr<Session> MustCreate(Plan plan, SessionOptions options = {}) {
  auto session = Session::Create(std::move(plan), std::move(options));
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  return std::move(*session);
}

// source -> scale (stream 1) -> [spin] -> checksum
Plan Chain(double factor, int64_t elem_cnt = 4, int spin_us = 0) {
  TaskDef src{.name = "src", .op_type = "source", .elem_cnt = elem_cnt};
  TaskDef scale{.name = "scale", .op_type = "scale", .inputs = {"src"}};
  scale.attrs["factor"] = FloatAttr(factor);
  scale.stream_index = 1;
  scale.elem_cnt = elem_cnt;
  std::vector<TaskDef> tasks = {src, scale};
  std::string last = "scale";
  if (spin_us > 0) {
    TaskDef spin{.name = "spin", .op_type = "spin", .inputs = {"scale"}};
    spin.attrs["us"] = IntAttr(spin_us);
    spin.elem_cnt = elem_cnt;
    tasks.push_back(spin);
    last = "spin";
  }
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {last}};
  sink.has_output = false;
  tasks.push_back(sink);
  return MustBuild(tasks, 0);
}

CheckpointData SmallData(int64_t piece) {
  CheckpointData data;
  data.piece = piece;
  data.plan = SignPlan(Chain(2));
  TaskState& sink = data.tasks.emplace_back();
  sink.task = "sink";
  sink.op_type = "checksum";
  sink.state.AddScalar<int64_t>("pieces", piece);
  sink.state.AddScalar<double>("checksum", 0.5 * piece);
  sink.state.AddScalar<bool>("in_order", true);
  TaskState& empty = data.tasks.emplace_back();
  empty.task = "scale";
  empty.op_type = "scale";
  data.user.AddValues<float>("weights", std::vector<float>{1.5f, -2, 3}, {3});
  return data;
}

void FlipByte(const std::string& path, int64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  REQUIRE(file.good());
  file.seekg(offset);
  char c = 0;
  file.read(&c, 1);
  c = static_cast<char>(c ^ 0x40);
  file.seekp(offset);
  file.write(&c, 1);
}

TEST_CASE("a checkpoint reads back exactly what was written", "[checkpoint]") {
  const std::string root = testing::TestTempDir("ckpt_roundtrip");
  auto written = WriteCheckpoint(root, SmallData(300));
  REQUIRE_OK(written.status());
  CHECK(written->path == root + "/ckpt-000000000300");
  CHECK(written->bytes > 0);
  auto data = ReadCheckpoint(written->path);
  REQUIRE_OK(data.status());
  CHECK(data->piece == 300);
  REQUIRE(data->tasks.size() == 2);
  CHECK(data->tasks[0].task == "sink");
  CHECK(*data->tasks[0].state.Scalar<double>("checksum") == 150.0);
  CHECK(*data->tasks[0].state.Scalar<int64_t>("pieces") == 300);
  CHECK(data->tasks[1].state.empty());
  std::vector<float> weights(3);
  REQUIRE_OK(data->user.Read<float>("weights", absl::MakeSpan(weights)));
  CHECK(weights == std::vector<float>{1.5f, -2, 3});
  CHECK(SignatureFingerprint(data->plan) ==
        SignatureFingerprint(SignPlan(Chain(2))));
  // Reading asks for the right type and size.
  std::vector<float> two(2);
  CHECK_THAT(Message(data->user.Read<float>("weights", absl::MakeSpan(two))),
             Catch::Equals("state 'weights': float32 [3] in the checkpoint, "
                           "the kernel holds float32 of 2 elements"));
  CHECK_THAT(Message(data->user.Scalar<int64_t>("epoch").status()),
             Catch::Equals("state 'epoch' is missing (the checkpoint holds "
                           "'weights')"));
}

TEST_CASE("the newest checkpoint is found, and keep_last prunes the rest",
          "[checkpoint]") {
  const std::string root = testing::TestTempDir("ckpt_prune");
  CHECK(absl::IsNotFound(ResolveCheckpoint(root).status()));
  CHECK_THAT(Message(ResolveCheckpoint(root + "/nowhere").status()),
             Catch::Equals("no checkpoint in '" + root +
                           "/nowhere': it does not exist"));
  for (int64_t piece : {100, 900, 300, 1000}) {
    REQUIRE_OK(WriteCheckpoint(root, SmallData(piece)).status());
  }
  // A writer that died mid-write leaves a temporary directory: never listed.
  fs::create_directories(root + "/.tmp-ckpt-000000002000-999999-0");
  auto list = ListCheckpoints(root);
  REQUIRE_OK(list.status());
  std::vector<int64_t> pieces;
  for (const auto& [piece, path] : *list) pieces.push_back(piece);
  CHECK(pieces == std::vector<int64_t>{100, 300, 900, 1000});
  CHECK(*ResolveCheckpoint(root) == root + "/ckpt-000000001000");
  CHECK(*ResolveCheckpoint(root + "/ckpt-000000000300") ==
        root + "/ckpt-000000000300");
  CheckpointWriteOptions keep;
  keep.keep_last = 2;
  REQUIRE_OK(WriteCheckpoint(root, SmallData(1100), keep).status());
  list = ListCheckpoints(root);
  REQUIRE(list->size() == 2);
  CHECK((*list)[0].first == 1000);
  CHECK((*list)[1].first == 1100);
  CHECK(!fs::exists(root + "/.tmp-ckpt-000000002000-999999-0"));
  // The same piece again replaces it whole.
  CheckpointData again = SmallData(1100);
  again.user.AddScalar<int64_t>("second", 2);
  REQUIRE_OK(WriteCheckpoint(root, again).status());
  auto read = ReadCheckpoint(root + "/ckpt-000000001100");
  REQUIRE_OK(read.status());
  CHECK(read->user.Find("second") != nullptr);
}

TEST_CASE("damaged checkpoints are refused, naming the file", "[checkpoint]") {
  const std::string root = testing::TestTempDir("ckpt_damage");
  const std::string path = root + "/ckpt-000000000300";
  auto fresh = [&] {
    fs::remove_all(root);
    REQUIRE_OK(WriteCheckpoint(root, SmallData(300)).status());
  };
  SECTION("a flipped bit in a state file") {
    fresh();
    FlipByte(path + "/state.bin", 3);
    auto read = ReadCheckpoint(path);
    CHECK(absl::IsDataLoss(read.status()));
    CHECK_THAT(Message(read.status()),
               Catch::Equals("checkpoint: '" + path +
                             "/state.bin': state 'pieces' of task 'sink' "
                             "fails its checksum (the file is corrupt)"));
  }
  SECTION("a truncated state file") {
    fresh();
    fs::resize_file(path + "/state.bin", 10);
    auto read = ReadCheckpoint(path);
    CHECK(absl::IsDataLoss(read.status()));
    CHECK_THAT(Message(read.status()),
               Catch::StartsWith("checkpoint: '" + path +
                                 "/state.bin' is truncated: 10 bytes"));
  }
  SECTION("a state file with bytes appended") {
    fresh();
    std::ofstream(path + "/state.bin", std::ios::app) << "x";
    CHECK_THAT(Message(ReadCheckpoint(path).status()),
               Catch::Equals("checkpoint: '" + path +
                             "/state.bin' has 30 bytes, its manifest says 29 "
                             "(the file is corrupt)"));
  }
  SECTION("a missing state file") {
    fresh();
    fs::remove(path + "/state.bin");
    CHECK_THAT(Message(ReadCheckpoint(path).status()),
               Catch::Equals("checkpoint: '" + path +
                             "/state.bin' is missing (state 'pieces' of task "
                             "'sink')"));
  }
  SECTION("a truncated manifest") {
    fresh();
    const auto size = fs::file_size(path + "/MANIFEST");
    fs::resize_file(path + "/MANIFEST", size - 7);
    CHECK_THAT(
        Message(ReadCheckpoint(path).status()),
        Catch::StartsWith("checkpoint: '" + path + "/MANIFEST' is truncated"));
  }
  SECTION("a flipped bit in the manifest") {
    fresh();
    FlipByte(path + "/MANIFEST", 60);
    CHECK_THAT(Message(ReadCheckpoint(path).status()),
               Catch::Equals("checkpoint: '" + path +
                             "/MANIFEST' fails its checksum (the file is "
                             "corrupt)"));
  }
  SECTION("something else") {
    fresh();
    std::ofstream(path + "/MANIFEST", std::ios::trunc) << "hello";
    CHECK_THAT(Message(ReadCheckpoint(path).status()),
               Catch::Equals("checkpoint: '" + path +
                             "/MANIFEST' is not a checkpoint manifest (it is "
                             "truncated)"));
    fs::remove(path + "/MANIFEST");
    CHECK(absl::IsDataLoss(ReadCheckpoint(path).status()));
  }
}

TEST_CASE("a checkpoint of another plan is refused, saying what differs",
          "[checkpoint]") {
  const std::string root = testing::TestTempDir("ckpt_foreign");
  auto session = MustCreate(Chain(2));
  REQUIRE_OK(session->Run(10).status());
  auto info = session->Checkpoint(root);
  REQUIRE_OK(info.status());
  const std::string path = info->path;
  struct Case {
    Plan plan;
    std::string diff;
  };
  std::vector<Case> cases;
  cases.push_back({Chain(3),
                   "task 'scale': attr 'factor' is {f: 2} in the "
                   "checkpoint, {f: 3} in this plan"});
  cases.push_back({Chain(2, 8),
                   "task 'src': output 'out' blob 'data' has "
                   "shape [4] in the checkpoint, [8] in this "
                   "plan"});
  cases.push_back({Chain(2, 4, 5),
                   "task 'spin' is in this plan but not in "
                   "the checkpoint"});
  for (Case& c : cases) {
    auto other = MustCreate(std::move(c.plan));
    absl::Status refused = other->Restore(root).status();
    CHECK(absl::IsFailedPrecondition(refused));
    CHECK_THAT(Message(refused),
               Catch::Equals("checkpoint '" + path +
                             "' is of another plan: " + c.diff));
    // Refusing changed nothing: the session runs from piece 0.
    REQUIRE_OK(other->Run(3).status());
    CHECK(other->Sinks()["sink"].pieces == 3);
  }
  // Where the tasks run changes no result: another stream is the same plan.
  Plan moved = Chain(2);
  moved.mutable_task(1)->mutable_stream()->set_stream_index(0);
  auto same = MustCreate(std::move(moved));
  REQUIRE_OK(same->Restore(root).status());
  auto missing =
      Session::Create(Chain(2), SessionOptions{.restore_from = root + "/none"});
  CHECK(absl::IsNotFound(missing.status()));
}

// A bound kernel with state: out = in + the sum of every earlier piece's
// first element, per task.
KernelBindings RunningSum(std::map<std::string, double>* sums,
                          bool with_state = true) {
  KernelBindings bindings;
  auto forward = [sums](KernelContext* ctx) -> absl::Status {
    double& sum = (*sums)[ctx->task_name()];
    const float* in =
        static_cast<const float*>(ctx->input(0).blob(0).raw_data());
    float* out = static_cast<float*>(ctx->output(0).blob(0).mutable_raw_data());
    const int64_t n = ctx->input(0).blob(0).elem_cnt();
    for (int64_t i = 0; i < n; ++i) out[i] = in[i] + static_cast<float>(sum);
    sum += in[0];
    return absl::OkStatus();
  };
  if (!with_state) {
    bindings.BindFunction("running_sum", forward);
    return bindings;
  }
  bindings.BindFunction(
      "running_sum", forward, nullptr,
      [sums](const KernelStateContext& ctx, KernelState* state) {
        state->AddScalar<double>("sum", (*sums)[ctx.task_name]);
        return absl::OkStatus();
      },
      [sums](const KernelStateContext& ctx, const KernelState& state) {
        auto sum = state.Scalar<double>("sum");
        if (!sum.ok()) return sum.status();
        (*sums)[ctx.task_name] = *sum;
        return absl::OkStatus();
      });
  return bindings;
}

Plan SumChain() {
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef sum{.name = "sum", .op_type = "running_sum", .inputs = {"src"}};
  sum.stream_index = 1;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"sum"}};
  sink.has_output = false;
  return MustBuild({src, sum, sink}, 0);
}

TEST_CASE("bound kernels with state: a restored session goes on exactly",
          "[checkpoint]") {
  const uint64_t seed = testing::TestSeed("bound kernel checkpoints");
  std::mt19937_64 random(seed);
  const int64_t cut = 1 + static_cast<int64_t>(random() % 40);
  const std::string root = testing::TestTempDir("ckpt_bound");
  std::map<std::string, double> a_sums, b_sums;
  SessionOptions a_options;
  a_options.kernels = RunningSum(&a_sums);
  auto a = MustCreate(SumChain(), a_options);
  REQUIRE_OK(a->Run(cut).status());
  auto info = a->Checkpoint(root);
  REQUIRE_OK(info.status());
  CHECK(info->piece == cut);
  REQUIRE_OK(a->Run(50 - cut).status());

  SessionOptions b_options;
  b_options.kernels = RunningSum(&b_sums);
  b_options.restore_from = root;
  auto b = MustCreate(SumChain(), b_options);
  REQUIRE(b->restored().has_value());
  CHECK(b->restored()->piece == cut);
  CHECK(b_sums["sum"] == a_sums["sum"] - [&] {
    double later = 0;  // what pieces cut..49 added
    for (int64_t p = cut; p < 50; ++p) later += p;
    return later;
  }());
  auto run = b->Run(50 - cut);
  REQUIRE_OK(run.status());
  CHECK(run->first_piece == cut);
  CHECK(b_sums["sum"] == a_sums["sum"]);
  const SinkSummary x = a->Sinks()["sink"], y = b->Sinks()["sink"];
  CHECK(y.pieces == 50);
  CHECK(y.in_order);
  CHECK(y.checksum == x.checksum);

  // The same plan with the kernel bound without state: refused by name.
  std::map<std::string, double> c_sums;
  SessionOptions c_options;
  c_options.kernels = RunningSum(&c_sums, /*with_state=*/false);
  auto c = MustCreate(SumChain(), c_options);
  CHECK_THAT(Message(c->Restore(root).status()),
             Catch::Equals("checkpoint '" + info->path +
                           "': task 'sum' (task_id 2) keeps no state, but the "
                           "checkpoint holds some for it (was its kernel bound "
                           "differently?)"));
  // And after a run a session cannot be restored.
  REQUIRE_OK(c->Run(1).status());
  CHECK_THAT(Message(c->Restore(root).status()),
             Catch::StartsWith("Restore: this session has run already"));
}

TEST_CASE("caller_checks_plan: states matched to tasks by name alone",
          "[checkpoint]") {
  const std::string root = testing::TestTempDir("ckpt_caller_checks");
  std::map<std::string, double> a_sums;
  SessionOptions a_options;
  a_options.kernels = RunningSum(&a_sums);
  auto a = MustCreate(SumChain(), a_options);
  REQUIRE_OK(a->Run(7).status());
  auto info = a->Checkpoint(root);
  REQUIRE_OK(info.status());
  RestoreOptions loose;
  loose.caller_checks_plan = true;
  // Another plan (a stateless task more) that the caller vouches for: the
  // stateful task finds its state and the run goes on from the cut.
  auto longer = [] {
    TaskDef src{.name = "src", .op_type = "source"};
    TaskDef scale{.name = "scale", .op_type = "scale", .inputs = {"src"}};
    scale.attrs["factor"] = FloatAttr(1);
    TaskDef sum{.name = "sum", .op_type = "running_sum", .inputs = {"scale"}};
    sum.stream_index = 1;
    TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"sum"}};
    sink.has_output = false;
    return MustBuild({src, scale, sum, sink}, 0);
  };
  std::map<std::string, double> b_sums;
  SessionOptions b_options;
  b_options.kernels = RunningSum(&b_sums);
  auto b = MustCreate(longer(), b_options);
  CHECK(absl::IsFailedPrecondition(b->Restore(root).status()));
  REQUIRE_OK(b->Restore(root, loose).status());
  CHECK(b_sums["sum"] == a_sums["sum"]);
  CHECK(b->next_piece() == 7);
  // A stateful task the checkpoint lacks, and state for a task that keeps
  // none here: refused by name.
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef other{.name = "other", .op_type = "running_sum", .inputs = {"src"}};
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"other"}};
  sink.has_output = false;
  std::map<std::string, double> c_sums;
  SessionOptions c_options;
  c_options.kernels = RunningSum(&c_sums);
  auto c = MustCreate(MustBuild({src, other, sink}, 0), c_options);
  CHECK_THAT(Message(c->Restore(root, loose).status()),
             Catch::Equals("checkpoint '" + info->path +
                           "' is of another plan: task 'other' keeps state "
                           "but is not in the checkpoint"));
  std::map<std::string, double> d_sums;
  SessionOptions d_options;
  d_options.kernels = RunningSum(&d_sums, /*with_state=*/false);
  auto d = MustCreate(SumChain(), d_options);
  CHECK_THAT(Message(d->Restore(root, loose).status()),
             Catch::Equals("checkpoint '" + info->path +
                           "' is of another plan: the checkpoint holds state "
                           "for task 'sum', which keeps none here"));
}

// src -> running_sum (stream 1, asynchronous if asked) -> sink.
Plan AsyncSumChain(bool host_async) {
  Plan plan = SumChain();
  plan.mutable_task(1)->mutable_stream()->set_host_async(host_async);
  return plan;
}

TEST_CASE("snapshots taken as a run goes by equal those taken at rest",
          "[checkpoint]") {
  for (bool host_async : {false, true}) {
    INFO("host_async " << host_async);
    std::map<std::string, double> a_sums, b_sums, c_sums;
    SessionOptions a_options;
    a_options.kernels = RunningSum(&a_sums);
    auto a = MustCreate(AsyncSumChain(host_async), a_options);
    REQUIRE_OK(a->Run(10).status());
    REQUIRE_OK(a->Start(90, {30, 61, 99}));
    auto at30 = a->TakeSnapshot(30);
    REQUIRE_OK(at30.status());
    CHECK(absl::IsNotFound(a->TakeSnapshot(40).status()));
    auto at61 = a->TakeSnapshot(61);
    REQUIRE_OK(at61.status());
    CHECK(absl::IsFailedPrecondition(a->TakeSnapshot(30).status()));
    REQUIRE_OK(a->Wait().status());
    auto at99 = a->TakeSnapshot(99);  // after the run: still there
    REQUIRE_OK(at99.status());
    CHECK(at30->piece == 30);
    CHECK(at61->piece == 61);

    // The same cut at rest.
    SessionOptions b_options;
    b_options.kernels = RunningSum(&b_sums);
    auto b = MustCreate(AsyncSumChain(host_async), b_options);
    REQUIRE_OK(b->Run(61).status());
    auto rest = b->Snapshot();
    REQUIRE_OK(rest.status());
    REQUIRE(rest->tasks.size() == at61->tasks.size());
    for (size_t t = 0; t < rest->tasks.size(); ++t) {
      INFO(rest->tasks[t].task);
      REQUIRE(rest->tasks[t].state.entries().size() ==
              at61->tasks[t].state.entries().size());
      for (size_t e = 0; e < rest->tasks[t].state.entries().size(); ++e) {
        CHECK(rest->tasks[t].state.entries()[e].bytes ==
              at61->tasks[t].state.entries()[e].bytes);
      }
    }
    // And a session restored from the cut in the middle ends like `a`.
    SessionOptions c_options;
    c_options.kernels = RunningSum(&c_sums);
    auto c = MustCreate(AsyncSumChain(host_async), c_options);
    REQUIRE_OK(c->RestoreFrom(*at61));
    REQUIRE_OK(c->Run(100 - 61).status());
    CHECK(c->Sinks()["sink"].checksum == a->Sinks()["sink"].checksum);
    CHECK(c->Sinks()["sink"].pieces == 100);
    CHECK(c_sums["sum"] == a_sums["sum"]);
  }
  auto session = MustCreate(Chain(2));
  CHECK_THAT(Message(session->Start(10, {0})),
             Catch::Equals("Start: snapshots at pieces strictly inside the run "
                           "(0, 10), ascending, in a plan without feeds; got "
                           "0"));
  CHECK(absl::IsInvalidArgument(session->Start(10, {5, 5})));
  CHECK(absl::IsInvalidArgument(session->Start(10, {10})));
}

// Two sources on their own streams, added: they hold at different pieces.
Plan TwoSources() {
  TaskDef a{.name = "a", .op_type = "source", .elem_cnt = 4};
  TaskDef b{.name = "b", .op_type = "source", .elem_cnt = 4};
  b.stream_index = 1;
  TaskDef add{.name = "add", .op_type = "add", .inputs = {"a", "b"}};
  add.stream_index = 2;
  add.elem_cnt = 4;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"add"}};
  sink.has_output = false;
  return MustBuild({a, b, add, sink}, 0);
}

TEST_CASE("a run held and ended at an agreed piece is a run of that many",
          "[checkpoint]") {
  for (const Plan& plan : {Chain(2.0), TwoSources()}) {
    auto a = MustCreate(plan);
    // Between runs the frontier is where the next run starts.
    REQUIRE_OK(a->Run(10).status());
    absl::StatusOr<int64_t> idle = a->HoldSources();
    REQUIRE_OK(idle.status());
    CHECK(*idle == 10);
    REQUIRE_OK(a->Start(10000000));
    absl::StatusOr<int64_t> frontier = a->HoldSources();
    REQUIRE_OK(frontier.status());
    CHECK(*frontier >= 10);
    // Held: no source goes past the frontier while the plan drains.
    const int64_t cut = *frontier + 3;
    REQUIRE_OK(a->EndRunAt(cut));
    absl::StatusOr<RunStats> ran = a->Wait();
    REQUIRE_OK(ran.status());
    CHECK(ran->pieces == cut - 10);
    CHECK(a->next_piece() == cut);
    auto b = MustCreate(plan);
    REQUIRE_OK(b->Run(cut).status());
    CHECK(a->Sinks().at("sink").pieces == cut);
    CHECK(a->Sinks().at("sink").checksum == b->Sinks().at("sink").checksum);
    // The session goes on from the cut.
    REQUIRE_OK(a->Run(5).status());
    REQUIRE_OK(b->Run(5).status());
    CHECK(a->Sinks().at("sink").checksum == b->Sinks().at("sink").checksum);
  }
  // A cut past a snapshot the run still takes is refused.
  auto c = MustCreate(Chain(2.0));
  REQUIRE_OK(c->Start(1000, {900}));
  absl::StatusOr<int64_t> held = c->HoldSources();
  REQUIRE_OK(held.status());
  CHECK(absl::IsFailedPrecondition(c->EndRunAt(*held)));
  REQUIRE_OK(c->EndRunAt(1000));  // the run's own end: released
  REQUIRE_OK(c->TakeSnapshot(900).status());
  REQUIRE_OK(c->Wait().status());
}

TEST_CASE("a restore that a kernel refuses fails the session, naming it",
          "[checkpoint]") {
  const std::string root = testing::TestTempDir("ckpt_refused");
  std::map<std::string, double> sums;
  SessionOptions options;
  options.kernels = RunningSum(&sums);
  auto a = MustCreate(SumChain(), options);
  REQUIRE_OK(a->Run(5).status());
  auto info = a->Checkpoint(root);
  REQUIRE_OK(info.status());
  KernelBindings refusing;
  refusing.BindFunction(
      "running_sum", [](KernelContext*) { return absl::OkStatus(); }, nullptr,
      [](const KernelStateContext&, KernelState*) { return absl::OkStatus(); },
      [](const KernelStateContext&, const KernelState& state) {
        return state.Scalar<int64_t>("sum").status();  // it is a double
      });
  SessionOptions b_options;
  b_options.kernels = refusing;
  auto b = MustCreate(SumChain(), b_options);
  absl::Status refused = b->Restore(root).status();
  CHECK_THAT(Message(refused),
             Catch::Equals("checkpoint '" + info->path +
                           "': task 'sum' (task_id 2): state 'sum': float64 "
                           "[] in the checkpoint, the kernel holds int64 of 1 "
                           "elements"));
  CHECK(b->status() == refused);
  CHECK(b->Run(1).status() == refused);
}

TEST_CASE("a busy session's checkpoint waits for the cut, within its bound",
          "[checkpoint]") {
  const std::string root = testing::TestTempDir("ckpt_busy");
  // 60 pieces of 3 ms each: the run takes about 180 ms. A thread per
  // stream whatever the machine's load (a count given is taken as it is):
  // on one shared thread the cut comes sooner, and the 20 ms bound can run
  // out in the states' stage instead, a different message.
  SessionOptions options;
  options.usable_cpus = 2;
  auto session = MustCreate(Chain(2, 4, 3000), options);
  REQUIRE_OK(session->Start(60));
  CheckpointOptions quick;
  quick.timeout = absl::Milliseconds(20);
  auto early = session->Checkpoint(root, quick);
  CHECK(absl::IsDeadlineExceeded(early.status()));
  CHECK_THAT(Message(early.status()),
             Catch::StartsWith("Snapshot: the plan did not come to a cut "
                               "within 0.02 s"));
  auto info = session->Checkpoint(root);  // waits for the run's end
  REQUIRE_OK(info.status());
  CHECK(info->piece == 60);
  REQUIRE_OK(session->Wait().status());
  auto data = ReadCheckpoint(info->path);
  REQUIRE_OK(data.status());
  CHECK(*data->tasks[0].state.Scalar<int64_t>("pieces") == 60);
  CHECK(*data->tasks[0].state.Scalar<double>("checksum") ==
        session->Sinks()["sink"].checksum);
}

// Training plan (fed): weights, velocities and step counts at a cut inside
// the one long run of a fed plan; pieces after a restore come out equal.
TEST_CASE("the training plan resumes bit for bit from a cut mid-run",
          "[checkpoint]") {
  const uint64_t seed = testing::TestSeed("training checkpoints");
  std::mt19937_64 random(seed);
  nn::MlpConfig config;
  config.inputs = 12;
  config.hidden = {8, 6};
  config.classes = 3;
  config.batch_size = 5;
  config.streams = 2;
  config.momentum = 0.9;
  config.lr = 0.05;
  config.decay = 0.5;
  config.decay_steps = 7;
  config.seed = seed;
  const int pieces = 30;
  const int cut = 1 + static_cast<int>(random() % (pieces - 1));
  std::vector<std::vector<float>> xs(pieces);
  std::vector<std::vector<int32_t>> ys(pieces);
  for (int p = 0; p < pieces; ++p) {
    const int rows = 1 + static_cast<int>(random() % 5);
    for (int i = 0; i < rows * 12; ++i) {
      xs[p].push_back(static_cast<float>(random() % 1000) / 500.0f - 1.0f);
    }
    for (int i = 0; i < rows; ++i) ys[p].push_back(random() % 3);
  }
  auto train = [&](nn::MlpTrainer* trainer, int from, int to,
                   std::vector<nn::PieceResult>* results) {
    for (int p = from; p < to; ++p) {
      REQUIRE_OK(trainer->Submit(xs[p].data(), ys[p].data(),
                                 static_cast<int64_t>(ys[p].size()),
                                 /*train=*/p % 4 != 3));
      while (trainer->pending() > 0) {
        auto result = trainer->Collect();
        REQUIRE_OK(result.status());
        results->push_back(*result);
      }
    }
  };
  const std::string root = testing::TestTempDir("ckpt_training");
  auto a = nn::MlpTrainer::Create(config);
  REQUIRE_OK(a.status());
  std::vector<nn::PieceResult> a_results, b_results;
  train(a->get(), 0, cut, &a_results);
  auto cut_data = (*a)->Snapshot();
  REQUIRE_OK(cut_data.status());
  CHECK(cut_data->piece == cut);
  REQUIRE_OK(WriteCheckpoint(root, *cut_data).status());
  train(a->get(), cut, pieces, &a_results);
  auto a_end = (*a)->Snapshot();
  REQUIRE_OK(a_end.status());
  REQUIRE_OK((*a)->Finish());

  auto b = nn::MlpTrainer::Create(config);
  REQUIRE_OK(b.status());
  REQUIRE_OK((*b)->Restore(root).status());
  train(b->get(), cut, pieces, &b_results);
  auto b_end = (*b)->Snapshot();
  REQUIRE_OK(b_end.status());
  REQUIRE_OK((*b)->Finish());
  REQUIRE(b_results.size() == static_cast<size_t>(pieces - cut));
  for (int p = cut; p < pieces; ++p) {
    INFO("piece " << p << " (cut " << cut << ")");
    CHECK(b_results[p - cut] == a_results[p]);
  }
  REQUIRE(a_end->tasks.size() == b_end->tasks.size());
  int variables = 0;
  for (size_t t = 0; t < a_end->tasks.size(); ++t) {
    INFO(a_end->tasks[t].task);
    const auto& x = a_end->tasks[t].state.entries();
    const auto& y = b_end->tasks[t].state.entries();
    REQUIRE(x.size() == y.size());
    for (size_t e = 0; e < x.size(); ++e) CHECK(x[e].bytes == y[e].bytes);
    variables += a_end->tasks[t].op_type == "variable";
  }
  CHECK(variables == 2 * 3 * 2);  // w and b of 3 layers on 2 streams
}

}  // namespace
}  // namespace actorflow::internal
