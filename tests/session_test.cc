// Session: a plan compiled once and run many times; feeding and fetching;
// failures at the caller's next call; destruction mid-run; kernels bound
// per session; no allocation per run.
#include "actorflow/session.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernels/builtin_kernels.h"
#include "plan/plan_builder.h"
#include "runtime/piece_cost.h"
#include "runtime/runtime.h"
#include "tests/allocation_counter.h"

namespace actorflow::internal {
namespace {

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

// source -> scale x2 (thread 1) -> identity (thread 0) -> sink
Plan Chain(int64_t pieces) {
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef scale{.name = "scale", .op_type = "scale", .inputs = {"src"}};
  scale.attrs["factor"] = FloatAttr(2);
  scale.stream_index = 1;
  TaskDef copy{.name = "copy", .op_type = "identity", .inputs = {"scale"}};
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"copy"}};
  sink.has_output = false;
  return MustBuild({src, scale, copy, sink}, pieces);
}

// feed (blob `type` [n], dynamic if asked) -> [middle op] -> fetch
Plan FeedFetch(DataType type, int64_t n, bool dynamic, int register_num,
               const std::string& middle = "identity", int middle_stream = 1) {
  TaskDef feed{.name = "in", .op_type = "feed"};
  feed.blobs = {BlobProto("x", type, {n}, dynamic)};
  feed.register_num = register_num;
  TaskDef mid{.name = "mid", .op_type = middle, .inputs = {"in"}};
  mid.stream_index = middle_stream;
  mid.infer_output = true;
  mid.register_num = register_num;
  TaskDef fetch{.name = "out", .op_type = "fetch", .inputs = {"mid"}};
  fetch.has_output = false;
  return MustBuild({feed, mid, fetch}, 0);
}

Tensor Ints(std::vector<int32_t> values) {
  auto tensor = Tensor::FromValues<int32_t>(
      {static_cast<int64_t>(values.size())}, values);
  REQUIRE(tensor.ok());
  return std::move(*tensor);
}

TEST_CASE("a session runs its plan again and again", "[session]") {
  auto session = MustCreate(Chain(0));
  auto first = session->Run(50);
  REQUIRE(first.ok());
  CHECK(first->first_piece == 0);
  CHECK(first->pieces == 50);
  CHECK(first->acts == 4 * 50);
  auto second = session->Run(50);
  REQUIRE(second.ok());
  CHECK(second->first_piece == 50);  // piece ids keep counting
  CHECK(second->acts == 4 * 50);
  auto empty = session->Run(0);
  REQUIRE(empty.ok());
  CHECK(empty->acts == 0);
  // One stream of pieces, as one run of 100 would make.
  auto once = RunPlan(Chain(100));
  REQUIRE(once.ok());
  SinkSummary sink = session->Sinks().at("sink");
  CHECK(sink.pieces == 100);
  CHECK(sink.in_order);
  CHECK(sink.checksum == once->sinks.at("sink").checksum);
}

TEST_CASE("two runs of a piece-independent plan give equal results",
          "[session]") {
  // step 0: every piece is the same, so each run adds the same checksum.
  TaskDef src{.name = "src", .op_type = "source"};
  src.attrs = {{"value", FloatAttr(1.25)}, {"step", FloatAttr(0)}};
  src.blobs = {BlobProto("x", DT_FLOAT64, {3, 2})};
  TaskDef cast{.name = "cast", .op_type = "cast", .inputs = {"src"}};
  cast.attrs["to"] = StringAttr("int32");
  cast.infer_output = true;
  cast.stream_index = 1;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"cast"}};
  sink.has_output = false;
  auto session = MustCreate(MustBuild({src, cast, sink}, 25));
  std::vector<double> totals;
  for (int run = 0; run < 3; ++run) {
    auto stats = session->Run(-1);
    REQUIRE(stats.ok());
    CHECK(stats->pieces == 25);
    CHECK(stats->acts == 75);
    totals.push_back(session->Sinks().at("sink").checksum);
  }
  // int32(1.25) = 1, six elements, 25 pieces: 150 per run.
  CHECK(totals == std::vector<double>{150, 300, 450});
}

TEST_CASE("kernels are created and Init'ed once per session", "[session]") {
  std::atomic<int> inits{0};
  std::atomic<int> forwards{0};
  SessionOptions options;
  options.kernels.BindFunction(
      "count",
      [&](KernelContext* ctx) {
        forwards.fetch_add(1);
        return CopyBlobs(ctx->input(0), ctx->output(0));
      },
      [&](const KernelInitContext& ctx) {
        inits.fetch_add(1);
        return ctx.InferOutputsLikeInput();
      });
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef count{.name = "count", .op_type = "count", .inputs = {"src"}};
  count.infer_output = true;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"count"}};
  sink.has_output = false;
  auto session =
      MustCreate(MustBuild({src, count, sink}, 7), std::move(options));
  CHECK(inits.load() == 1);
  for (int run = 0; run < 3; ++run) REQUIRE(session->Run(-1).ok());
  CHECK(inits.load() == 1);
  CHECK(forwards.load() == 21);
}

TEST_CASE("kernels bound to the caller's objects and lambdas", "[session]") {
  // A sink the caller owns and reads afterwards.
  class Collect final : public Kernel {
   public:
    absl::Status Forward(KernelContext* ctx) override {
      auto values = ctx->input(0).blob(0).data<float>();
      if (!values.ok()) return values.status();
      firsts.push_back((*values)[0]);
      return absl::OkStatus();
    }
    std::vector<float> firsts;
  };
  Collect collect;
  SessionOptions options;
  options.kernels.BindObject("collect", &collect);
  // A binding wins over the registry's kernel of the same op_type, for
  // this session only.
  options.kernels.BindFunction("scale", [](KernelContext* ctx) {
    auto in = ctx->input(0).blob(0).data<float>();
    auto out = ctx->output(0).blob(0).mutable_data<float>();
    if (!in.ok()) return in.status();
    if (!out.ok()) return out.status();
    for (size_t i = 0; i < out->size(); ++i) (*out)[i] = (*in)[i] + 100;
    return absl::OkStatus();
  });
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef scale{.name = "scale", .op_type = "scale", .inputs = {"src"}};
  scale.infer_output = true;  // no `factor`: the bound kernel needs none
  TaskDef sink{.name = "sink", .op_type = "collect", .inputs = {"scale"}};
  sink.has_output = false;
  sink.stream_index = 1;
  Plan plan = MustBuild({src, scale, sink}, 4);
  auto session = MustCreate(plan, std::move(options));
  REQUIRE(session->Run(4).ok());
  CHECK(collect.firsts == std::vector<float>{100, 101, 102, 103});

  // The registry's scale still wants its factor.
  auto plain = Session::Create(plan);
  CHECK(plain.status().message() ==
        "task 'scale' (task_id 2): kernel.attr['factor']: missing; scale "
        "needs a float (f)\n"
        "task 'sink' (task_id 3): kernel.op_type: unknown op_type 'collect' "
        "(known: add, cast, checksum, concat, fail, feed, fetch, head, "
        "identity, normalize, scale, slice, source, spin)");

  SessionOptions twice;
  twice.kernels.BindObject("collect", &collect);
  TaskDef sink2 = sink;
  sink2.name = "sink2";
  sink.inputs = sink2.inputs = {"src"};
  auto refused =
      Session::Create(MustBuild({src, sink, sink2}, 1), std::move(twice));
  CHECK(refused.status().message() ==
        "task 'sink2' (task_id 3): kernel.op_type: 'collect' is bound to one "
        "kernel object, already used by task 'sink' (task_id 2)");
}

TEST_CASE("feed and fetch: pieces in order, across threads", "[session]") {
  auto session = MustCreate(FeedFetch(DT_INT32, 8, /*dynamic=*/true, 2));
  const int pieces = 2000;
  // Catch2's assertions are for the main thread: the feeder records.
  absl::Status feeder_status;
  std::thread feeder([&] {
    for (int p = 0; p < pieces && feeder_status.ok(); ++p) {
      std::vector<int32_t> values(1 + p % 8);
      for (size_t i = 0; i < values.size(); ++i) {
        values[i] = p * 10 + static_cast<int32_t>(i);
      }
      auto tensor = Tensor::FromValues<int32_t>(
          {static_cast<int64_t>(values.size())}, values);
      feeder_status = session->Feed("in", *tensor);
    }
    if (feeder_status.ok()) feeder_status = session->CloseFeeds();
  });
  int in_order = 0;
  for (int p = 0; p < pieces; ++p) {
    auto tensor = session->Fetch("out");
    if (!tensor.ok() || tensor->shape().size() != 1 ||
        tensor->shape()[0] != 1 + p % 8) {
      break;
    }
    auto values = tensor->data<int32_t>();
    if ((*values)[0] != p * 10 || values->back() != p * 10 + p % 8) break;
    ++in_order;
  }
  absl::Status end = session->Fetch("out").status();
  feeder.join();
  CHECK(feeder_status.ok());
  CHECK(in_order == pieces);
  CHECK(end.message() ==
        "fetch 'out': end of data: every piece has been fetched");
  auto stats = session->Wait();
  REQUIRE(stats.ok());
  CHECK(stats->pieces == pieces);
  CHECK(stats->first_piece == 0);

  // The next Feed starts the next run; piece ids go on.
  REQUIRE(session->Feed("in", Ints({7})).ok());
  auto borrowed = session->FetchBorrowed("out");
  REQUIRE(borrowed.ok());
  CHECK(borrowed->piece_id() == pieces);
  CHECK((*borrowed->view().data<int32_t>())[0] == 7);
  borrowed->Release();
  REQUIRE(session->CloseFeeds().ok());
  CHECK(absl::IsOutOfRange(session->Fetch("out").status()));
  auto next = session->Wait();
  REQUIRE(next.ok());
  CHECK(next->first_piece == pieces);
  CHECK(next->pieces == 1);
}

TEST_CASE("a full feed blocks until the plan frees a register", "[session]") {
  // feed -> identity -> fetch, two registers each: the caller can be four
  // pieces ahead of its fetches (two in the identity's registers, held by
  // the fetch; two in the feed's, which the identity cannot take while its
  // own are held). Once four are fed, no register can come free until a
  // Fetch, whatever the timing.
  auto session = MustCreate(FeedFetch(DT_INT32, 1, false, 2));
  const int fed = 4;
  for (int p = 0; p < fed; ++p) REQUIRE(session->Feed("in", Ints({p})).ok());
  CHECK(session->TryFeed("in", Ints({99})).message() ==
        "feed 'in': every register is in use (register_num 2)");
  absl::Status blocked_status = absl::UnknownError("not fed");
  std::thread blocked([&] {
    // Blocks until a fetch frees a register.
    blocked_status = session->Feed("in", Ints({fed}));
  });
  std::vector<int32_t> got;
  for (int p = 0; p <= fed; ++p) {
    auto tensor = session->Fetch("out");
    if (!tensor.ok()) break;
    got.push_back((*tensor->data<int32_t>())[0]);
  }
  blocked.join();
  CHECK(blocked_status.ok());
  std::vector<int32_t> expected;
  for (int p = 0; p <= fed; ++p) expected.push_back(p);
  CHECK(got == expected);
  REQUIRE(session->CloseFeeds().ok());
  CHECK(absl::IsOutOfRange(session->Fetch("out").status()));
  REQUIRE(session->Wait().ok());
}

TEST_CASE("feed checks each tensor against its blob", "[session]") {
  auto session = MustCreate(FeedFetch(DT_INT32, 4, /*dynamic=*/false, 2));
  auto floats = Tensor::FromValues<float>({4}, {1, 2, 3, 4});
  CHECK(session->Feed("in", *floats).message() ==
        "feed 'in': blob 'x': the tensor is float32, the blob int32");
  CHECK(session->Feed("in", Ints({1, 2, 3})).message() ==
        "feed 'in': blob 'x': dimension 0 of the tensor is 3, but the blob's "
        "is 4 ([4])");
  CHECK(session->Feed("in", Tensor(DT_INT32, {2, 2})).message() ==
        "feed 'in': blob 'x': the tensor has shape [2, 2], rank 2; the blob "
        "has rank 1 [4]");
  CHECK(session->Feed("nope", Ints({1, 2, 3, 4})).message() ==
        "no feed task named 'nope' (feed tasks: 'in')");
  CHECK(session->Fetch("nope").status().message() ==
        "no fetch task named 'nope' (fetch tasks: 'out')");
  auto dynamic = MustCreate(FeedFetch(DT_INT32, 4, /*dynamic=*/true, 2));
  CHECK(dynamic->Feed("in", Ints({1, 2, 3, 4, 5})).message() ==
        "feed 'in': blob 'x': dimension 0 of the tensor is 5, above the "
        "blob's maximum 4 ([4])");
  // Nothing was fed, so nothing started.
  CHECK_FALSE(session->running());
}

// feed -> fail (at piece `at`) -> fetch
Plan FailingFeed(int register_num, int64_t at) {
  TaskDef feed{.name = "in", .op_type = "feed"};
  feed.blobs = {BlobProto("x", DT_FLOAT32, {2})};
  feed.register_num = register_num;
  TaskDef boom{.name = "boom", .op_type = "fail", .inputs = {"in"}};
  boom.attrs["at_piece"] = IntAttr(at);
  boom.infer_output = true;
  boom.stream_index = 1;
  TaskDef fetch{.name = "out", .op_type = "fetch", .inputs = {"boom"}};
  fetch.has_output = false;
  return MustBuild({feed, boom, fetch}, 0);
}

const char kBoom[] =
    "task 'boom' (task_id 2) failed at piece 3: fail kernel: reached "
    "at_piece 3";

TEST_CASE("a kernel's error surfaces at the next Fetch, then everywhere",
          "[session]") {
  auto session = MustCreate(FailingFeed(2, 3));
  for (int p = 0; p < 3; ++p) {
    REQUIRE(session->Feed("in", Tensor(DT_FLOAT32, {2})).ok());
    auto piece = session->Fetch("out");
    REQUIRE(piece.ok());
  }
  // Piece 3 fails after Feed has handed it over: the next call says so.
  REQUIRE(session->Feed("in", Tensor(DT_FLOAT32, {2})).ok());
  CHECK(session->Fetch("out").status().message() == kBoom);
  CHECK(session->status().message() == kBoom);
  CHECK(session->Feed("in", Tensor(DT_FLOAT32, {2})).message() == kBoom);
  CHECK(session->TryFeed("in", Tensor(DT_FLOAT32, {2})).message() == kBoom);
  CHECK(session->CloseFeeds().message() == kBoom);
  CHECK(session->Wait().status().message() == kBoom);
  CHECK(session->Start(1).message() == kBoom);
  CHECK(session->Fetch("out").status().message() == kBoom);
}

TEST_CASE("a failure wakes a caller blocked in Feed", "[session]") {
  // Nobody fetches: piece 0 waits in the fetch, piece 1 fails. Whether the
  // feeder is blocked by then or feeds on, its last Feed returns the error.
  auto session = MustCreate(FailingFeed(1, 1));
  const std::string boom =
      "task 'boom' (task_id 2) failed at piece 1: fail kernel: reached "
      "at_piece 1";
  absl::Status last;
  std::thread feeder([&] {
    for (int p = 0; p < 1000 && last.ok(); ++p) {
      last = session->Feed("in", Tensor(DT_FLOAT32, {2}));
    }
  });
  feeder.join();
  CHECK(last.message() == boom);
  // What the fetch held when the run failed is dropped, not delivered.
  CHECK(session->Fetch("out").status().message() == boom);
}

TEST_CASE("Run's error names the task and piece, and sticks", "[session]") {
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef boom{.name = "boom", .op_type = "fail", .inputs = {"src"}};
  boom.attrs["at_piece"] = IntAttr(12);
  boom.has_output = false;
  auto session = MustCreate(MustBuild({src, boom}, 10));
  REQUIRE(session->Run(10).ok());  // pieces 0..9
  auto failed = session->Run(10);  // piece 12 fails
  CHECK(failed.status().message() ==
        "task 'boom' (task_id 2) failed at piece 12: fail kernel: reached "
        "at_piece 12");
  CHECK(session->Run(1).status() == failed.status());
}

// A ladder: src (piece p holds p), t0 = src, t_k = t_(k-1) + src, so t_k
// holds (k + 1) p; the first `rungs / 2` on stream 0, the rest on stream 1,
// and a checksum of the last. A task can act several times in a row: src
// has 3 registers, every rung 2.
std::vector<TaskDef> Ladder(int rungs) {
  TaskDef src{.name = "src", .op_type = "source"};
  src.register_num = 3;
  src.elem_cnt = 4;
  std::vector<TaskDef> tasks = {src};
  for (int k = 0; k < rungs; ++k) {
    TaskDef rung{.name = "t" + std::to_string(k), .op_type = "add"};
    rung.inputs = {k == 0 ? "src" : "t" + std::to_string(k - 1)};
    if (k > 0) rung.inputs.push_back("src");
    rung.stream_index = k < rungs / 2 ? 0 : 1;
    rung.elem_cnt = 4;
    tasks.push_back(rung);
  }
  TaskDef sink{.name = "sink",
               .op_type = "checksum",
               .inputs = {"t" + std::to_string(rungs - 1)}};
  sink.stream_index = 1;
  sink.has_output = false;
  tasks.push_back(sink);
  return tasks;
}

TEST_CASE("batched deliveries give the same results and end runs alike",
          "[session]") {
  constexpr int kRungs = 80;
  constexpr int64_t kPieces = 50;
  // 4 elements of 80 p over pieces 0..49.
  const double want = 4.0 * kRungs * (kPieces * (kPieces - 1) / 2);
  struct Case {
    int from;      // SessionOptions::batch_deliveries_from
    int batching;  // threads that batch: each has 41 actors
  } cases[] = {{1, 2}, {41, 2}, {42, 0}, {std::numeric_limits<int>::max(), 0}};
  for (const Case& c : cases) {
    INFO("batch_deliveries_from " << c.from);
    SessionOptions options;
    options.batch_deliveries_from = c.from;
    options.share_cpu_threads = false;  // a thread per stream
    auto session = MustCreate(MustBuild(Ladder(kRungs), kPieces), options);
    CHECK(session->threads().batching_threads == c.batching);
    for (int run = 1; run <= 2; ++run) {
      auto stats = session->Run(kPieces);
      REQUIRE(stats.ok());
      CHECK(stats->acts == (kRungs + 2) * kPieces);
      const SinkSummary sink = session->Sinks().at("sink");
      CHECK(sink.in_order);
      CHECK(sink.pieces == run * kPieces);
      if (run == 1) CHECK(sink.checksum == want);
    }
  }

  // A task that fails mid-run, among batching ones: the run ends with its
  // error, nothing hangs, and the error sticks.
  std::vector<TaskDef> tasks = Ladder(kRungs);
  TaskDef boom{.name = "boom", .op_type = "fail", .inputs = {"t20"}};
  boom.attrs["at_piece"] = IntAttr(30);
  boom.has_output = false;
  tasks.push_back(boom);
  SessionOptions options;
  options.batch_deliveries_from = 1;
  auto failing = MustCreate(MustBuild(tasks, kPieces), options);
  auto failed = failing->Run(kPieces);
  CHECK(failed.status().message() ==
        absl::StrCat("task 'boom' (task_id ", kRungs + 3,
                     ") failed at piece 30: fail kernel: reached at_piece 30"));
  CHECK(failing->Run(1).status() == failed.status());
}

TEST_CASE("calls that cannot work are refused with the reason", "[session]") {
  auto fetching = MustCreate(FeedFetch(DT_INT32, 2, false, 2));
  CHECK(fetching->Run(1).status().message() ==
        "Run: the plan has feed or fetch tasks (in, out); drive it with "
        "Feed/CloseFeeds or Start, Fetch and Wait");
  auto chain = MustCreate(Chain(3));
  CHECK(chain->Wait().status().message() == "no run in progress");
  REQUIRE(chain->Start(5).ok());
  CHECK(chain->Start(5).message() ==
        "a run is in progress; Wait() for it to end first");
  REQUIRE(chain->Wait().ok());

  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef fetch{.name = "out", .op_type = "fetch", .inputs = {"src"}};
  fetch.has_output = false;
  auto sourced = MustCreate(MustBuild({src, fetch}, 3));
  CHECK(sourced->Fetch("out").status().message() ==
        "fetch 'out': no run has started (Start first)");
  REQUIRE(sourced->Start(3).ok());
  for (int p = 0; p < 3; ++p) {
    auto piece = sourced->Fetch("out");
    REQUIRE(piece.ok());
    CHECK((*piece->data<float>())[0] == p);
  }
  CHECK(absl::IsOutOfRange(sourced->Fetch("out").status()));
  REQUIRE(sourced->Wait().ok());

  TaskDef feed{.name = "in", .op_type = "feed"};
  feed.blobs = {BlobProto("x", DT_FLOAT32, {1})};
  TaskDef add{.name = "add", .op_type = "add", .inputs = {"in", "src"}};
  add.infer_output = true;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"add"}};
  sink.has_output = false;
  src.elem_cnt = 1;
  CHECK(Session::Create(MustBuild({feed, src, add, sink}, 1))
            .status()
            .message() ==
        "plan: has feeds (task 'in' (task_id 1)) and other sources (task "
        "'src' (task_id 2)); a plan with feeds takes every piece from its "
        "feeds");
}

TEST_CASE("destroying a session mid-run cancels and joins", "[session]") {
  SECTION("plain sources, many pieces to go") {
    auto session = MustCreate(Chain(0));
    REQUIRE(session->Start(100'000'000).ok());
    session.reset();  // must return: sources stop, everything drains
  }
  SECTION("pieces waiting to be fetched") {
    TaskDef src{.name = "src", .op_type = "source"};
    TaskDef fetch{.name = "out", .op_type = "fetch", .inputs = {"src"}};
    fetch.has_output = false;
    fetch.stream_index = 1;
    auto session = MustCreate(MustBuild({src, fetch}, 0));
    REQUIRE(session->Start(1000).ok());
    REQUIRE(session->Fetch("out").ok());
    auto held = session->FetchBorrowed("out");
    REQUIRE(held.ok());
    held->Release();
    session.reset();
  }
  SECTION("a feed left open") {
    auto session = MustCreate(FeedFetch(DT_INT32, 1, false, 2));
    REQUIRE(session->Feed("in", Ints({1})).ok());
    REQUIRE(session->Feed("in", Ints({2})).ok());
    session.reset();
  }
}

// Binds `scale` for the session alone, as a user's kernel would be: the
// session then cannot tell how long its acts take, and places streams by
// the CPUs alone (runtime/piece_cost.h), as these tests expect.
void BindScaleAsUsers(SessionOptions* options) {
  options->kernels.Bind("scale",
                        [] { return std::make_unique<ScaleKernel>(); });
}

// src (s0) -> scale (s1) -> scale (s2) -> scale (s3) -> identity (s4, host
// asynchronous) -> sink (s5): five plain CPU streams and one other.
Plan SixStreams() {
  std::vector<TaskDef> tasks = {{.name = "src", .op_type = "source"}};
  for (int i = 1; i <= 3; ++i) {
    TaskDef scale{.name = "scale" + std::to_string(i),
                  .op_type = "scale",
                  .inputs = {tasks.back().name}};
    scale.stream_index = i;
    scale.attrs["factor"] = FloatAttr(i + 1);
    tasks.push_back(scale);
  }
  TaskDef async{.name = "async", .op_type = "identity", .inputs = {"scale3"}};
  async.stream_index = 4;
  async.host_async = true;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"async"}};
  sink.stream_index = 5;
  sink.has_output = false;
  tasks.push_back(async);
  tasks.push_back(sink);
  return MustBuild(tasks, 500);
}

TEST_CASE("CPU streams beyond the usable CPUs share that many threads",
          "[session]") {
  struct Case {
    int usable;
    bool share;
    int threads;      // every stream's
    int cpu_threads;  // the plain CPU streams'
  };
  double checksum = -1;
  for (const Case& c :
       {Case{2, true, 3, 2}, Case{1, true, 2, 1}, Case{5, true, 6, 5},
        Case{8, true, 6, 5}, Case{2, false, 6, 5}}) {
    INFO("usable " << c.usable << (c.share ? "" : ", not shared"));
    SessionOptions options;
    options.usable_cpus = c.usable;
    options.share_cpu_threads = c.share;
    BindScaleAsUsers(&options);
    options.trace = true;
    auto session = MustCreate(SixStreams(), std::move(options));
    const ThreadPlacement& placement = session->threads();
    CHECK(placement.cpus.count == c.usable);
    CHECK(placement.cpus.source == "SessionOptions");
    CHECK(placement.streams == 6);
    CHECK(placement.cpu_streams == 5);
    CHECK(placement.threads == c.threads);
    CHECK(placement.cpu_threads == c.cpu_threads);
    REQUIRE(session->Run(-1).ok());
    // The same pieces, whatever the threads; the trace names each task's
    // own stream.
    const SinkSummary sink = session->Sinks().at("sink");
    CHECK(sink.pieces == 500);
    CHECK(sink.in_order);
    if (checksum < 0) checksum = sink.checksum;
    CHECK(sink.checksum == checksum);
    for (const auto& task : session->trace().tasks) {
      if (task.name == "scale3") CHECK(task.stream == "m0/cpu0/s3");
    }
  }
  // Piece p is p everywhere at the source, times 2 * 3 * 4 after the scales.
  CHECK(checksum == 24.0 * 4 * (500.0 * 499 / 2));
}

TEST_CASE("shared threads take consecutive streams, balanced by tasks",
          "[session]") {
  // A line of 8 stages on 3 streams (3, 3 and 2 tasks) on 2 threads: the
  // least loaded split keeps stream 0 alone (3 against 5 tasks; 6 against
  // 2 the other way).
  std::vector<TaskDef> tasks;
  for (int i = 0; i < 8; ++i) {
    TaskDef stage{.name = "t" + std::to_string(i),
                  .op_type = i == 0   ? "source"
                             : i == 7 ? "checksum"
                                      : "scale"};
    if (i > 0) stage.inputs = {tasks.back().name};
    if (stage.op_type == "scale") stage.attrs["factor"] = FloatAttr(1);
    stage.stream_index = i * 3 / 8;
    tasks.push_back(stage);
  }
  tasks.back().has_output = false;
  SessionOptions options;
  options.usable_cpus = 2;
  options.stream_sharing = StreamSharing::kConsecutive;
  auto session = MustCreate(MustBuild(tasks, 100), std::move(options));
  const ThreadPlacement& placement = session->threads();
  CHECK(placement.cpu_threads == 2);
  CHECK(placement.sharing == "consecutive");
  CHECK(placement.thread_of_stream ==
        std::map<std::string, std::string>{{"m0/cpu0/s0", "m0/cpu0/s0"},
                                           {"m0/cpu0/s1", "m0/cpu0/s1"},
                                           {"m0/cpu0/s2", "m0/cpu0/s1"}});
  REQUIRE(session->Run(-1).ok());
  CHECK(session->Sinks().at("t7").pieces == 100);
}

// A line of `stages` stages, stage i on stream i * streams / stages.
std::vector<TaskDef> LineOnStreams(int stages, int streams) {
  std::vector<TaskDef> tasks;
  for (int i = 0; i < stages; ++i) {
    TaskDef stage{.name = "t" + std::to_string(i),
                  .op_type = i == 0            ? "source"
                             : i == stages - 1 ? "checksum"
                                               : "scale"};
    if (i > 0) stage.inputs = {tasks.back().name};
    if (stage.op_type == "scale") stage.attrs["factor"] = FloatAttr(2);
    stage.stream_index = i * streams / stages;
    stage.register_num = 1 + i % 3;
    tasks.push_back(stage);
  }
  tasks.back().has_output = false;
  return tasks;
}

TEST_CASE("uneven blocks of streams run on threads that take any stream",
          "[session]") {
  struct Case {
    int stages, streams, usable;
    StreamSharing sharing;
    std::string expected;  // ThreadPlacement::sharing
  };
  double checksum = -1;
  for (const Case& c : {
           // 3, 3 and 2 tasks: blocks of 3 and 5 against a mean of 4.
           Case{8, 3, 2, StreamSharing::kAuto, "any_thread"},
           // 2 tasks a stream: even blocks.
           Case{8, 4, 2, StreamSharing::kAuto, "consecutive"},
           Case{8, 4, 2, StreamSharing::kAnyThread, "any_thread"},
           Case{8, 8, 3, StreamSharing::kAnyThread, "any_thread"},
           Case{8, 3, 2, StreamSharing::kConsecutive, "consecutive"},
           // One thread: nothing to balance.
           Case{8, 3, 1, StreamSharing::kAnyThread, "consecutive"},
           Case{8, 2, 2, StreamSharing::kAnyThread, "none"},
       }) {
    INFO(c.stages << " stages on " << c.streams << " streams, " << c.usable
                  << " CPUs, expecting " << c.expected);
    SessionOptions options;
    options.usable_cpus = c.usable;
    options.stream_sharing = c.sharing;
    BindScaleAsUsers(&options);
    options.trace = true;
    auto session = MustCreate(MustBuild(LineOnStreams(c.stages, c.streams), 0),
                              std::move(options));
    const ThreadPlacement& placement = session->threads();
    CHECK(placement.sharing == c.expected);
    if (c.expected == "any_thread") {
      CHECK(placement.cpu_threads == c.usable);
      CHECK(placement.threads == c.usable);
      for (const auto& [stream, thread] : placement.thread_of_stream) {
        CHECK(thread == "any");
      }
    }
    // Several runs on one session: the pool's strands park between runs.
    for (int run = 0; run < 3; ++run) REQUIRE(session->Run(300).ok());
    const SinkSummary sink = session->Sinks().at("t7");
    CHECK(sink.pieces == 900);
    CHECK(sink.in_order);
    if (checksum < 0) checksum = sink.checksum;
    CHECK(sink.checksum == checksum);
    // Each task still acts in piece order, and a stream's acts never
    // overlap.
    std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> spans;
    for (const auto& task : session->trace().tasks) {
      REQUIRE(task.spans.size() == 300);
      for (size_t i = 0; i < task.spans.size(); ++i) {
        const ActSpan& act = task.spans[i];
        if (i > 0) CHECK(act.piece == task.spans[i - 1].piece + 1);
        spans[task.stream].push_back({act.begin_ns, act.end_ns});
      }
    }
    for (auto& [stream, acts] : spans) {
      std::sort(acts.begin(), acts.end());
      for (size_t i = 1; i < acts.size(); ++i) {
        CHECK(acts[i].first >= acts[i - 1].second);
      }
    }
  }
  // Piece p (0 to 899 over the three runs) is 4 elements of p at the
  // source (TaskDef::elem_cnt), times 2^6 after the scales.
  CHECK(checksum == 4 * 64.0 * (900.0 * 899 / 2));
}

TEST_CASE(
    "streams of acts too short to pay for hand-offs share one thread, "
    "unless asked otherwise",
    "[session]") {
  // A line of 8 stages on 3 streams, 2 usable CPUs: built-in kernels whose
  // time follows their bytes, on registers of `elem_cnt` floats.
  struct Case {
    int64_t elem_cnt;
    StreamSharing sharing;
    bool users_scale;  // `scale` bound for the session, cost unknown
    int cpu_threads;
  };
  for (const Case& c : {
           // 16 bytes an act: one thread.
           Case{4, StreamSharing::kAuto, false, 1},
           // 1 MiB an act: the overlap pays for the hand-offs.
           Case{1 << 18, StreamSharing::kAuto, false, 2},
           // A kernel the session cannot cost; placements asked for.
           Case{4, StreamSharing::kAuto, true, 2},
           Case{4, StreamSharing::kConsecutive, false, 2},
           Case{4, StreamSharing::kAnyThread, false, 2},
       }) {
    INFO("elem_cnt " << c.elem_cnt << ", sharing "
                     << static_cast<int>(c.sharing) << ", user's scale "
                     << c.users_scale);
    std::vector<TaskDef> tasks = LineOnStreams(8, 3);
    for (TaskDef& task : tasks) task.elem_cnt = c.elem_cnt;
    SessionOptions options;
    options.usable_cpus = 2;
    options.stream_sharing = c.sharing;
    if (c.users_scale) BindScaleAsUsers(&options);
    auto session = MustCreate(MustBuild(tasks, 0), std::move(options));
    const ThreadPlacement& placement = session->threads();
    CHECK(placement.cpu_streams == 3);
    CHECK(placement.cpu_threads == c.cpu_threads);
    if (c.cpu_threads == 1) {
      CHECK(placement.sharing == "consecutive");
      // 8 acts of 30 ns and 16-32 bytes.
      CHECK(placement.estimated_piece_ns >= 8 * kActFixedNs);
      CHECK(placement.estimated_piece_ns < 8 * (kActFixedNs + 10));
    } else {
      CHECK(placement.estimated_piece_ns == 0);
    }
    REQUIRE(session->Run(50).ok());
    const SinkSummary sink = session->Sinks().at("t7");
    CHECK(sink.pieces == 50);
    CHECK(sink.in_order);
    // Piece p is elem_cnt elements of p, times 2^6 after the scales.
    CHECK(sink.checksum == c.elem_cnt * 64.0 * (50.0 * 49 / 2));
  }
}

TEST_CASE("CheaperOnOneThread weighs the overlap against the hand-offs",
          "[session]") {
  // Streams of 300, 100 and 100 ns: two threads save at most 200 ns (the
  // longest stream, 300, against 500 on one).
  const PieceCost cost{.stream_ns = {300, 100, 100}};
  CHECK(CheaperOnOneThread({cost.stream_ns, 1}, 2));  // 200 <= 200
  CHECK_FALSE(CheaperOnOneThread({cost.stream_ns, 0}, 2));
  // Even streams: an even share bounds the saving (10 us of 30 on 3
  // threads saves 20 us: a hand-off of 0.2 us each way does not outweigh).
  const std::vector<int64_t> even = {10'000, 10'000, 10'000};
  CHECK_FALSE(CheaperOnOneThread({even, 6}, 3));
  CHECK(CheaperOnOneThread({even, 100}, 3));
  // Two threads on the same: 30 - 15 = 15 us saved.
  CHECK_FALSE(CheaperOnOneThread({even, 74}, 2));
  CHECK(CheaperOnOneThread({even, 75}, 2));
  // One thread: nothing to weigh.
  CHECK_FALSE(CheaperOnOneThread({even, 1000}, 1));
  CHECK(EstimatedActNs("scale", 1000) == kActFixedNs + 50);
  CHECK_FALSE(EstimatedActNs("matmul", 1000).has_value());
}

TEST_CASE("streams beside threads that keep every CPU busy share one thread",
          "[session]") {
  // As many spinning threads as the process may use: every CPU is busy
  // elsewhere when the session looks, so the line's two streams run on one
  // thread rather than one each on a CPU that another thread holds.
  const int usable = ProcessUsableCpus().count;
  if (ProcessUsableCpus().source == kUsableCpusEnv || usable > 16) {
    WARN("not checked: the count is given, or too many CPUs to keep busy");
    return;
  }
  std::atomic<bool> stop{false};
  std::atomic<int> started{0};
  std::vector<std::thread> burners;
  for (int i = 0; i < usable; ++i) {
    burners.emplace_back([&] {
      started.fetch_add(1);
      while (!stop.load(std::memory_order_relaxed)) {
      }
    });
  }
  while (started.load() < usable) std::this_thread::yield();
  auto session = MustCreate(MustBuild(LineOnStreams(8, 2), 0));
  stop = true;
  for (std::thread& burner : burners) burner.join();
  const ThreadPlacement& placement = session->threads();
  CHECK(placement.cpus.busy_elsewhere >= usable);
  CHECK(placement.cpu_streams == 2);
  CHECK(placement.cpu_threads == 1);
  CHECK(placement.sharing == "consecutive");
  REQUIRE(session->Run(200).ok());
  const SinkSummary sink = session->Sinks().at("t7");
  CHECK(sink.pieces == 200);
  CHECK(sink.in_order);
  CHECK(sink.checksum == 4 * 64.0 * (200.0 * 199 / 2));
  // One CPU stream never looks: nothing to share.
  auto single = MustCreate(MustBuild(LineOnStreams(8, 1), 0));
  CHECK(single->threads().cpus.busy_elsewhere == 0);
  CHECK(single->threads().cpu_threads == 1);
}

TEST_CASE("no allocation per run in steady state", "[session][alloc]") {
  auto session = MustCreate(Chain(0));
  for (int warm = 0; warm < 10; ++warm) REQUIRE(session->Run(200).ok());
  bool all_ok = true;
  int64_t before = testing::AllocationCount();
  for (int run = 0; run < 20; ++run) all_ok &= session->Run(200).ok();
  int64_t used = testing::AllocationCount() - before;
  CHECK(all_ok);
  INFO(used << " allocations in 20 runs");
  CHECK(used == 0);
}

}  // namespace
}  // namespace actorflow::internal
