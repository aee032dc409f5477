// The register protocol, end of data and failures, through whole runs.
#include "runtime/runtime.h"

#include <atomic>
#include <catch2/catch.hpp>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "actorflow/kernel.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

// --- test kernels ---------------------------------------------------------

// Shared with the test body: how often the counting source acted, and a gate
// that a `hold` kernel waits on at one piece.
struct Probe {
  std::atomic<int64_t> source_acts{0};
  std::atomic<bool> gate_open{false};
  std::atomic<int> holders_waiting{0};
  std::mutex mu;
  std::vector<std::string> notes;          // failures seen inside kernels
  std::vector<const float*> seen_data[2];  // per hold task: data pointers

  void Reset() {
    source_acts = 0;
    gate_open = false;
    holders_waiting = 0;
    notes.clear();
    seen_data[0].clear();
    seen_data[1].clear();
  }
  void Note(std::string note) {
    std::lock_guard<std::mutex> lock(mu);
    notes.push_back(std::move(note));
  }
};
Probe probe;

// A source that counts its acts and writes the piece id everywhere.
class CountingSource final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    return ctx.ExpectOutput(true);
  }
  absl::Status Forward(KernelContext* ctx) override {
    probe.source_acts.fetch_add(1);
    auto out = ctx->output(0).blob(0).mutable_data<float>();
    if (!out.ok()) return out.status();
    for (float& x : *out) x = static_cast<float>(ctx->piece_id());
    return absl::OkStatus();
  }
};
ACTORFLOW_REGISTER_KERNEL("test_counting_source", CountingSource);

// A sink that, at piece attr `at` (default 0), waits for the gate while
// holding its input register, then checks the input was not overwritten
// and records how many pieces the source had made by then (attr `slot`
// picks where it records data pointers).
class Hold final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto at = ctx.IntAttrOr("at", 0);
    auto slot = ctx.IntAttrOr("slot", 0);
    auto expect = ctx.IntAttrOr("expect_source_acts", -1);
    if (!at.ok() || !slot.ok() || !expect.ok()) {
      return absl::InvalidArgumentError("hold: bad attrs");
    }
    at_ = *at;
    slot_ = static_cast<int>(*slot);
    expect_source_acts_ = *expect;
    return absl::OkStatus();
  }
  absl::Status Forward(KernelContext* ctx) override {
    auto in = ctx->input(0).blob(0).data<float>();
    if (!in.ok()) return in.status();
    {
      std::lock_guard<std::mutex> lock(probe.mu);
      probe.seen_data[slot_].push_back(in->data());
    }
    if (ctx->piece_id() != at_) return absl::OkStatus();
    probe.holders_waiting.fetch_add(1);
    while (!probe.gate_open.load()) std::this_thread::yield();
    // Nothing may have reused this register while we held it.
    for (float x : *in) {
      if (x != static_cast<float>(at_)) {
        probe.Note("held register was overwritten");
        break;
      }
    }
    int64_t acts = probe.source_acts.load();
    if (expect_source_acts_ >= 0 && acts != expect_source_acts_) {
      probe.Note("source acted " + std::to_string(acts) +
                 " times while held, expected " +
                 std::to_string(expect_source_acts_));
    }
    return absl::OkStatus();
  }

 private:
  int64_t at_ = 0;
  int slot_ = 0;
  int64_t expect_source_acts_ = -1;
};
ACTORFLOW_REGISTER_KERNEL("test_hold", Hold);

class Throwing final : public Kernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    if (ctx->piece_id() == 3) throw std::runtime_error("boom at 3");
    return absl::OkStatus();
  }
};
ACTORFLOW_REGISTER_KERNEL("test_throw", Throwing);

// --- helpers --------------------------------------------------------------

TaskDef Source(std::string name, int stream = 0, int register_num = 2,
               int64_t elem_cnt = 4) {
  TaskDef def{.name = std::move(name), .op_type = "source"};
  def.stream_index = stream;
  def.register_num = register_num;
  def.elem_cnt = elem_cnt;
  return def;
}

TaskDef Unary(std::string name, std::string op, std::string input,
              int stream = 0, int register_num = 2, int64_t elem_cnt = 4) {
  TaskDef def{.name = std::move(name), .op_type = std::move(op)};
  def.inputs = {std::move(input)};
  def.stream_index = stream;
  def.register_num = register_num;
  def.elem_cnt = elem_cnt;
  return def;
}

TaskDef Sink(std::string name, std::vector<std::string> inputs,
             int stream = 0) {
  TaskDef def{.name = std::move(name), .op_type = "checksum"};
  def.inputs = std::move(inputs);
  def.stream_index = stream;
  def.has_output = false;
  return def;
}

RunResult MustRun(const std::vector<TaskDef>& tasks, int64_t pieces) {
  absl::StatusOr<Plan> plan = BuildPlan(tasks, pieces);
  REQUIRE(plan.ok());
  absl::StatusOr<RunResult> result = RunPlan(*plan);
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *result;
}

absl::Status RunError(const std::vector<TaskDef>& tasks, int64_t pieces) {
  absl::StatusOr<Plan> plan = BuildPlan(tasks, pieces);
  REQUIRE(plan.ok());
  absl::StatusOr<RunResult> result = RunPlan(*plan);
  REQUIRE_FALSE(result.ok());
  return result.status();
}

// Sum over pieces 0..n-1 of (value + p * step) * elem_cnt * factor.
double Triangle(int64_t n) { return static_cast<double>(n) * (n - 1) / 2; }

// --- the register protocol ------------------------------------------------

// Runs `plan` on another thread, opens the gate once `holders` hold kernels
// wait at it and the source has acted `source_acts` times, and returns the
// result. The hold kernels check, at the gate, that the source made exactly
// the pieces the free registers allow and that their register is intact.
absl::StatusOr<RunResult> RunWithGate(const Plan& plan, int holders,
                                      int64_t source_acts) {
  absl::StatusOr<RunResult> result;
  // A hold kernel blocks its thread, which the plan's contract forbids
  // (docs/plans.md): its stream must have that thread to itself.
  RunOptions options;
  options.share_cpu_threads = false;
  std::thread run([&] { result = RunPlan(plan, options); });
  bool reached = testing::WaitUntil([&] {
    return probe.holders_waiting.load() == holders &&
           probe.source_acts.load() >= source_acts;
  });
  probe.gate_open = true;
  run.join();
  CHECK(reached);
  return result;
}

TEST_CASE(
    "a consumer holding a register blocks the producer once "
    "register_num buffers are out",
    "[runtime][protocol]") {
  for (int register_num : {1, 2, 3, 5}) {
    INFO("register_num " << register_num);
    probe.Reset();
    TaskDef source{.name = "src", .op_type = "test_counting_source"};
    source.register_num = register_num;
    TaskDef hold{.name = "hold", .op_type = "test_hold"};
    hold.inputs = {"src"};
    hold.stream_index = 1;
    hold.has_output = false;
    // Holding piece 0: pieces 0..register_num-1 fill every buffer.
    hold.attrs["expect_source_acts"] = IntAttr(register_num);
    auto plan = BuildPlan({source, hold}, register_num + 10);
    REQUIRE(plan.ok());
    absl::StatusOr<RunResult> result = RunWithGate(*plan, 1, register_num);
    REQUIRE(result.ok());
    for (const std::string& note : probe.notes) FAIL_CHECK(note);
    CHECK(probe.source_acts == register_num + 10);
  }
}

TEST_CASE("several consumers share one register", "[runtime][protocol]") {
  probe.Reset();
  TaskDef source{.name = "src", .op_type = "test_counting_source"};
  source.register_num = 3;
  std::vector<TaskDef> tasks = {source};
  for (int h = 0; h < 2; ++h) {
    TaskDef hold{.name = "hold" + std::to_string(h), .op_type = "test_hold"};
    hold.inputs = {"src"};
    hold.stream_index = 1 + h;
    hold.has_output = false;
    hold.attrs["slot"] = IntAttr(h);
    hold.attrs["at"] = IntAttr(4);
    // While either reader holds piece 4, the other two buffers can take
    // pieces 5 and 6 and no more: the source has acted exactly 7 times.
    hold.attrs["expect_source_acts"] = IntAttr(7);
    tasks.push_back(hold);
  }
  auto plan = BuildPlan(tasks, 20);
  REQUIRE(plan.ok());
  absl::StatusOr<RunResult> result = RunWithGate(*plan, 2, 7);
  REQUIRE(result.ok());
  for (const std::string& note : probe.notes) FAIL_CHECK(note);
  REQUIRE(probe.seen_data[0].size() == 20);
  // Both readers saw the very same buffer for every piece, cycling through
  // the three buffers.
  CHECK(probe.seen_data[0] == probe.seen_data[1]);
  CHECK(probe.seen_data[0][0] != probe.seen_data[0][1]);
  CHECK(probe.seen_data[0][0] == probe.seen_data[0][3]);
}

// --- end of data ----------------------------------------------------------

TEST_CASE("EORD reaches every actor of a diamond, fan-out and fan-in",
          "[runtime][eord]") {
  SECTION("diamond across threads") {
    TaskDef twice = Unary("twice", "scale", "src", 1);
    twice.attrs["factor"] = FloatAttr(2);
    TaskDef thrice = Unary("thrice", "scale", "src", 2);
    thrice.attrs["factor"] = FloatAttr(3);
    TaskDef add{.name = "add", .op_type = "add", .inputs = {"twice", "thrice"}};
    RunResult r = MustRun(
        {Source("src"), twice, thrice, add, Sink("sink", {"add"})}, 500);
    CHECK(r.sinks.at("sink").pieces == 500);
    CHECK(r.sinks.at("sink").checksum == 5 * 4 * Triangle(500));
    CHECK(r.sinks.at("sink").in_order);
  }
  SECTION("fan-out to five sinks on five threads") {
    std::vector<TaskDef> tasks = {Source("src", 0, 1)};
    for (int s = 0; s < 5; ++s) {
      tasks.push_back(Sink("sink" + std::to_string(s), {"src"}, s + 1));
    }
    RunResult r = MustRun(tasks, 300);
    REQUIRE(r.sinks.size() == 5);
    for (const auto& [name, sink] : r.sinks) {
      CHECK(sink.pieces == 300);
      CHECK(sink.checksum == 4 * Triangle(300));
      CHECK(sink.in_order);
    }
  }
  SECTION("fan-in of two sources") {
    TaskDef add{.name = "add", .op_type = "add", .inputs = {"a", "b"}};
    add.stream_index = 2;
    TaskDef b = Source("b", 1, 3);
    b.attrs["value"] = FloatAttr(10);
    RunResult r =
        MustRun({Source("a", 0, 1), b, add, Sink("sink", {"add"})}, 100);
    CHECK(r.sinks.at("sink").checksum == 4 * (2 * Triangle(100) + 10 * 100));
  }
  SECTION("zero pieces") {
    RunResult r = MustRun({Source("src"), Sink("sink", {"src"}, 1)}, 0);
    CHECK(r.sinks.at("sink").pieces == 0);
    CHECK(r.acts == 0);
  }
  SECTION("an output nobody consumes, and control tokens (elem_cnt 0)") {
    TaskDef lonely = Source("lonely", 1, 1, 0);
    RunResult r = MustRun(
        {lonely, Source("src", 0, 2, 0),
         Unary("copy", "identity", "src", 1, 1, 0), Sink("sink", {"copy"}, 2)},
        50);
    CHECK(r.sinks.at("sink").pieces == 50);
    CHECK(r.sinks.at("sink").checksum == 0);
    CHECK(r.acts == 50 * 4);
  }
}

// --- failures -------------------------------------------------------------

TEST_CASE("a failing kernel stops the run and names task and piece",
          "[runtime][failure]") {
  for (bool host_async : {false, true}) {
    for (int register_num : {1, 2, 4}) {
      for (int64_t at : {0, 7, 99}) {
        INFO("host_async " << host_async << ", register_num " << register_num
                           << ", at_piece " << at);
        TaskDef boom = Unary("boom", "fail", "src", 1, register_num);
        boom.host_async = host_async;
        boom.attrs["at_piece"] = IntAttr(at);
        absl::Status status =
            RunError({Source("src", 0, register_num), boom,
                      Unary("copy", "identity", "boom", 0, register_num),
                      Sink("sink", {"copy"}, 2)},
                     100);
        CHECK(absl::IsAborted(status));
        CHECK(status.message() ==
              "task 'boom' (task_id 2) failed at piece " + std::to_string(at) +
                  ": fail kernel: reached at_piece " + std::to_string(at));
      }
    }
  }
}

TEST_CASE("a failure in one branch of a diamond does not hang the other",
          "[runtime][failure]") {
  TaskDef boom = Unary("boom", "fail", "src", 1, 1);
  boom.attrs["at_piece"] = IntAttr(5);
  TaskDef slow = Unary("slow", "spin", "src", 2, 3);
  slow.attrs["us"] = IntAttr(10);
  TaskDef add{.name = "add", .op_type = "add", .inputs = {"boom", "slow"}};
  absl::Status status = RunError(
      {Source("src", 0, 4), boom, slow, add, Sink("sink", {"add"})}, 10'000);
  CHECK(status.message().find("task 'boom' (task_id 2) failed at piece 5") ==
        0);
}

TEST_CASE("a kernel that throws is reported, not a crash",
          "[runtime][failure]") {
  TaskDef thrower{.name = "thrower", .op_type = "test_throw"};
  thrower.inputs = {"src"};
  thrower.has_output = false;
  thrower.stream_index = 1;
  absl::Status status = RunError({Source("src"), thrower}, 10);
  CHECK(absl::IsInternal(status));
  CHECK(status.message() ==
        "task 'thrower' (task_id 2) failed at piece 3: kernel threw: boom at "
        "3");
}

TEST_CASE("an invalid plan is refused before anything runs",
          "[runtime][failure]") {
  TaskDef scale = Unary("scale", "scale", "src");  // no factor
  absl::Status status =
      RunError({Source("src"), scale, Sink("sink", {"scale"})}, 10);
  CHECK(absl::IsInvalidArgument(status));
  CHECK(status.message() ==
        "task 'scale' (task_id 2): kernel.attr['factor']: missing; scale "
        "needs a float (f)");
}

TEST_CASE("--pieces overrides total_piece_num", "[runtime]") {
  auto plan = BuildPlan({Source("src"), Sink("sink", {"src"}, 1)}, 10);
  REQUIRE(plan.ok());
  RunOptions options;
  options.pieces = 33;
  auto result = RunPlan(*plan, options);
  REQUIRE(result.ok());
  CHECK(result->pieces == 33);
  CHECK(result->sinks.at("sink").pieces == 33);
}

// Same-thread peers hand registers over by direct calls, up to a depth of
// 64, and through the queue past it. A chain longer than that on one thread
// (mixed with a hop to a second thread and back), with fan-outs that rejoin,
// must keep every piece in order and every value exact.
TEST_CASE(
    "long same-thread chains keep pieces in order past the direct-call "
    "depth",
    "[runtime][protocol]") {
  for (int register_num : {1, 2, 3}) {
    INFO("register_num " << register_num);
    std::vector<TaskDef> tasks = {Source("s0", 0, register_num)};
    std::string last = "s0";
    for (int i = 1; i <= 150; ++i) {
      std::string name = "s" + std::to_string(i);
      int stream = (i >= 70 && i < 75) ? 1 : 0;
      if (i % 25 == 0) {
        // A fan-out that rejoins: last -> (a, b) -> add.
        tasks.push_back(
            Unary(name + "a", "identity", last, stream, register_num));
        tasks.push_back(
            Unary(name + "b", "identity", last, stream, register_num));
        TaskDef add{.name = name, .op_type = "add"};
        add.inputs = {name + "a", name + "b"};
        add.stream_index = stream;
        add.register_num = register_num;
        add.elem_cnt = 4;
        tasks.push_back(add);
      } else {
        tasks.push_back(Unary(name, "identity", last, stream, register_num));
      }
      last = name;
    }
    tasks.push_back(Sink("sink", {last}));
    RunResult result = MustRun(tasks, 300);
    const SinkSummary& sink = result.sinks.at("sink");
    CHECK(sink.pieces == 300);
    CHECK(sink.in_order);
    // Six fan-outs each double the value; source elements are p (4 each).
    CHECK(sink.checksum == Triangle(300) * 4 * 64);
  }
}

// --- host asynchronous streams --------------------------------------------

TaskDef OnAsyncStream(TaskDef def) {
  def.host_async = true;
  return def;
}

// The kernel on the async stream writes its output only after spinning on
// the stream's worker: a consumer that got the register early would read
// the previous piece's values and the checksum would be off.
TEST_CASE("a host async stream delivers a register only after its kernel ran",
          "[runtime][async]") {
  for (int register_num : {1, 2, 3}) {
    INFO("register_num " << register_num);
    TaskDef slow = OnAsyncStream(Unary("slow", "spin", "src", 1, register_num));
    slow.attrs["us"] = IntAttr(20);
    TaskDef copy =
        OnAsyncStream(Unary("copy", "identity", "slow", 1, register_num));
    RunResult result = MustRun(
        {Source("src", 0, register_num), slow, copy, Sink("sink", {"copy"}, 2)},
        200);
    const SinkSummary& sink = result.sinks.at("sink");
    CHECK(sink.pieces == 200);
    CHECK(sink.in_order);
    CHECK(sink.checksum == Triangle(200) * 4);
    CHECK(result.acts == 4 * 200);
  }
}

TEST_CASE("a failure downstream drains acts still in flight on an async stream",
          "[runtime][async][failure]") {
  TaskDef slow = OnAsyncStream(Unary("slow", "spin", "src", 1, 4));
  slow.attrs["us"] = IntAttr(50);
  TaskDef boom = Unary("boom", "fail", "slow", 0, 2);
  boom.attrs["at_piece"] = IntAttr(3);
  absl::Status status = RunError(
      {Source("src", 0, 4), slow, boom, Sink("sink", {"boom"}, 2)}, 1000);
  CHECK(status.message() ==
        "task 'boom' (task_id 3) failed at piece 3: fail kernel: reached "
        "at_piece 3");
}

}  // namespace
}  // namespace actorflow::internal

namespace actorflow::internal {
namespace {

TEST_CASE("a traced run records every act, and no consumer before its producer",
          "[runtime][trace]") {
  for (bool host_async : {false, true}) {
    DYNAMIC_SECTION((host_async ? "host async streams" : "CPU streams")) {
      // src -> a (stream 1) -> b (stream 2) -> sink, with a fan-in at b.
      TaskDef spin_a{.name = "a",
                     .op_type = "spin",
                     .inputs = {"src"},
                     .stream_index = 1,
                     .host_async = host_async};
      spin_a.attrs["us"] = IntAttr(20);
      auto plan = BuildPlan({{.name = "src", .op_type = "source"},
                             spin_a,
                             {.name = "b",
                              .op_type = "add",
                              .inputs = {"a", "src"},
                              .stream_index = 2,
                              .host_async = host_async},
                             {.name = "sink",
                              .op_type = "checksum",
                              .inputs = {"b"},
                              .has_output = false}},
                            40);
      REQUIRE(plan.ok());
      RunOptions options;
      options.trace = true;
      auto result = RunPlan(*plan, options);
      REQUIRE(result.ok());
      const RunTrace& trace = result->trace;
      REQUIRE(trace.tasks.size() == 4);
      CHECK(trace.tasks[1].name == "a");
      CHECK(trace.tasks[1].stream ==
            (host_async ? "m0/cpu0/s1a" : "m0/cpu0/s1"));
      CHECK(trace.tasks[1].async == host_async);
      CHECK(!trace.tasks[0].async);
      for (const RunTrace::Task& task : trace.tasks) {
        INFO(task.name);
        REQUIRE(task.spans.size() == 40);
        for (int64_t p = 0; p < 40; ++p) {
          CHECK(task.spans[p].piece == p);
          CHECK(task.spans[p].begin_ns >= trace.origin_ns);
          CHECK(task.spans[p].begin_ns <= task.spans[p].end_ns);
        }
      }
      // The spin's 20 us show, and a consumer starts a piece only after
      // each producer has finished it (on async streams: after the
      // poller saw the kernel done).
      auto span = [&](int task, int64_t p) {
        return trace.tasks[task].spans[p];
      };
      for (int64_t p = 0; p < 40; ++p) {
        CHECK(span(1, p).end_ns - span(1, p).begin_ns >= 20'000);
        CHECK(span(1, p).begin_ns >= span(0, p).end_ns);
        CHECK(span(2, p).begin_ns >= span(1, p).end_ns);
        CHECK(span(2, p).begin_ns >= span(0, p).end_ns);
        CHECK(span(3, p).begin_ns >= span(2, p).end_ns);
      }
    }
  }
}

TEST_CASE("an untraced run records nothing", "[runtime][trace]") {
  auto plan = BuildPlan({{.name = "src", .op_type = "source"},
                         {.name = "sink",
                          .op_type = "checksum",
                          .inputs = {"src"},
                          .has_output = false}},
                        10);
  REQUIRE(plan.ok());
  auto result = RunPlan(*plan);
  REQUIRE(result.ok());
  CHECK(result->trace.tasks.empty());
}

}  // namespace
}  // namespace actorflow::internal
