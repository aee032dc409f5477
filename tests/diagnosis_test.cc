// Seeing and bounding a run: per-task stats, the progress figures, the
// deadline and stall limits with their hang report, cancelling a run whose
// kernel does not return, and the report's wording on a cycle of waits.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/session.h"
#include "diagnosis/hang_report.h"
#include "kernels/builtin_kernels.h"
#include "plan/plan_builder.h"

namespace actorflow::internal {
namespace {

constexpr int64_t kMs = 1000 * 1000;

Plan MustBuild(const std::vector<TaskDef>& tasks, int64_t pieces) {
  auto plan = BuildPlan(tasks, pieces);
  REQUIRE(plan.ok());
  return *plan;
}

std::unique_ptr<Session> MustCreate(Plan plan, SessionOptions options) {
  auto session = Session::Create(std::move(plan), std::move(options));
  INFO(session.status().ToString());
  REQUIRE(session.ok());
  return std::move(*session);
}

// src -> slow (spins `us` per piece, on its own thread) -> sink, one
// register per edge.
Plan SlowMiddle(int64_t us, const std::string& sink_op = "checksum") {
  TaskDef src{.name = "src", .op_type = "source"};
  src.register_num = 1;
  TaskDef slow{.name = "slow", .op_type = "spin", .inputs = {"src"}};
  slow.attrs["us"] = IntAttr(us);
  slow.stream_index = 1;
  slow.register_num = 1;
  TaskDef sink{.name = "sink", .op_type = sink_op, .inputs = {"slow"}};
  sink.has_output = false;
  return MustBuild({src, slow, sink}, 0);
}

TEST_CASE("stats: acts equal pieces for every task", "[diagnosis]") {
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef scale{.name = "scale", .op_type = "scale", .inputs = {"src"}};
  scale.attrs["factor"] = FloatAttr(2);
  scale.stream_index = 1;
  TaskDef copy{.name = "copy", .op_type = "identity", .inputs = {"scale"}};
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"copy"}};
  sink.has_output = false;
  SessionOptions options;
  options.stats = true;
  auto session = MustCreate(MustBuild({src, scale, copy, sink}, 0), options);
  for (int64_t pieces : {300, 7, 0}) {
    auto run = session->Run(pieces);
    REQUIRE(run.ok());
    REQUIRE(run->tasks.size() == 4);
    int64_t acts = 0;
    for (const auto& [name, task] : run->tasks) {
      INFO(name);
      CHECK(task.acts == pieces);
      CHECK(task.busy_ns >= 0);
      acts += task.acts;
    }
    CHECK(acts == run->acts);
    // A source waits on no input, a task without outputs on no output.
    CHECK(run->tasks.at("src").input_wait_ns == 0);
    CHECK(run->tasks.at("sink").output_wait_ns == 0);
  }
}

TEST_CASE("stats: a slow stage shows as busy, and its neighbours as blocked",
          "[diagnosis]") {
  // 20 pieces of 2 ms each in `slow`: it is busy for at least 40 ms. The
  // source, with one register, spends about that long waiting for it to
  // come back; the sink as long waiting for input. Lower bounds only: a
  // slower machine only makes each figure larger.
  SessionOptions options;
  options.stats = true;
  options.share_cpu_threads = false;  // a thread per stream, even on 1 CPU
  auto session = MustCreate(SlowMiddle(2000), options);
  auto run = session->Run(20);
  REQUIRE(run.ok());
  const TaskStats& src = run->tasks.at("src");
  const TaskStats& slow = run->tasks.at("slow");
  const TaskStats& sink = run->tasks.at("sink");
  INFO("src busy " << src.busy_ns << " in " << src.input_wait_ns << " out "
                   << src.output_wait_ns);
  INFO("slow busy " << slow.busy_ns << " in " << slow.input_wait_ns << " out "
                    << slow.output_wait_ns);
  INFO("sink busy " << sink.busy_ns << " in " << sink.input_wait_ns);
  CHECK(slow.busy_ns >= 40 * kMs);
  CHECK(src.output_wait_ns >= 25 * kMs);
  CHECK(sink.input_wait_ns >= 25 * kMs);
  CHECK(src.output_wait_ns > 10 * src.busy_ns);
  // Without stats a run reports no tasks.
  auto plain = MustCreate(SlowMiddle(0), SessionOptions{});
  auto quick = plain->Run(5);
  REQUIRE(quick.ok());
  CHECK(quick->tasks.empty());
}

TEST_CASE("progress counts the pieces through the last task", "[diagnosis]") {
  auto session = MustCreate(SlowMiddle(0), SessionOptions{});
  CHECK_FALSE(session->Progress().running);
  auto run = session->Run(40);
  REQUIRE(run.ok());
  RunProgress progress = session->Progress();
  CHECK_FALSE(progress.running);
  CHECK(progress.pieces_done == 40);
  CHECK(progress.pieces_total == 40);
  CHECK(progress.acts == 3 * 40);
}

TEST_CASE("stall: a plan starved by its caller gets a hang report",
          "[diagnosis]") {
  // Nobody fetches: the fetch's two registers stay with the caller, `slow`
  // has nowhere to put its output, and nothing acts again.
  SessionOptions options;
  options.stall = absl::Milliseconds(300);
  auto session = MustCreate(SlowMiddle(0, "fetch"), options);
  REQUIRE(session->Start(10).ok());
  auto run = session->Wait();
  REQUIRE(absl::IsDeadlineExceeded(run.status()));
  const std::string report(run.status().message());
  INFO(report);
  CHECK(absl::StrContains(report, "hang report: no task acted for"));
  CHECK(absl::StrContains(report, "stall limit 0.30 s"));
  // `slow` made one piece and holds the source's next one.
  CHECK(absl::StrContains(
      report,
      "task 'slow' (task_id 2) [spin on m0/cpu0/s1, 1 acts]: waits "
      "for a free register of 'out' (regst_desc 20, register_num 1)"));
  CHECK(absl::StrContains(report, "'sink' (a fetch: its caller holds"));
  CHECK(absl::StrContains(report, "cycle of waits: none"));
  CHECK_FALSE(session->left_threads_running());
  // The failure sticks, and destroying the session joins everything.
  CHECK(absl::IsDeadlineExceeded(session->Start(1)));
}

TEST_CASE("timeout: a kernel running past the deadline is named, and left",
          "[diagnosis]") {
  // The kernel spins 1.5 s; the run may take 0.3 s and the cancel waits
  // 0.2 s for it. It is left running; it returns later into an abandoned
  // loop, which exits without touching the destroyed session.
  SessionOptions options;
  options.timeout = absl::Milliseconds(300);
  options.cancel_grace = absl::Milliseconds(200);
  options.share_cpu_threads = false;  // a thread per stream, even on 1 CPU
  auto session = MustCreate(SlowMiddle(1500 * 1000), options);
  auto run = session->Run(3);
  REQUIRE(absl::IsDeadlineExceeded(run.status()));
  const std::string report(run.status().message());
  INFO(report);
  CHECK(absl::StrContains(report,
                          "the run did not end within its timeout of 0.30 s"));
  CHECK(absl::StrContains(report,
                          "task 'slow' (task_id 2) [spin on "
                          "m0/cpu0/s1]: its kernel has been running "
                          "for"));
  CHECK(absl::StrContains(report,
                          "waits for input 'in' (regst_desc 20): "
                          "nothing ready from 'slow' (its kernel"));
  CHECK(absl::StrContains(report,
                          "left running: the kernel of task 'slow' "
                          "(task_id 2) did not return"));
  CHECK(session->left_threads_running());
  session.reset();
}

TEST_CASE("a run within its limits is not disturbed by them", "[diagnosis]") {
  SessionOptions options;
  options.timeout = absl::Seconds(600);
  options.stall = absl::Seconds(600);
  auto session = MustCreate(SlowMiddle(100), options);
  for (int i = 0; i < 3; ++i) {
    auto run = session->Run(50);
    REQUIRE(run.ok());
    CHECK(run->acts == 150);
  }
  CHECK(session->Sinks().at("sink").pieces == 150);
}

TEST_CASE("destroying a session cancels a run whose kernel never returns",
          "[diagnosis]") {
  SessionOptions options;
  options.cancel_grace = absl::Milliseconds(100);
  auto session = MustCreate(SlowMiddle(2000 * 1000), options);
  REQUIRE(session->Start(2).ok());
  // Wait for the kernel to be under way: Progress counts the source's act.
  while (session->Progress().acts == 0) {
    std::this_thread::yield();
  }
  session.reset();  // must return: the stuck thread is left, the rest joined
}

TEST_CASE(
    "a plan over the register memory limit is refused before any "
    "allocation",
    "[diagnosis]") {
  // 32 GiB per register, two registers: this machine could not allocate
  // it, so only a refusal ahead of allocation gives this message.
  TaskDef src{.name = "src", .op_type = "source"};
  src.blobs = {BlobProto("x", DT_FLOAT32, {int64_t{1} << 33})};
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"src"}};
  sink.has_output = false;
  auto huge = Session::Create(MustBuild({src, sink}, 1));
  REQUIRE(absl::IsInvalidArgument(huge.status()));
  CHECK(huge.status().message() ==
        "plan: its registers need 68719476736 bytes (64.0 GiB), over the "
        "limit of 17179869184 bytes (16.0 GiB) per plan (max_register_bytes; "
        "actorflow --max-register-bytes); the largest: task 'src' (task_id 1) "
        "'out' (regst_desc 10): register_num 2 x 34359738368 bytes");
  // The limit is inclusive: 2 registers of 16 floats (64 bytes, counted as
  // 256 each for their bookkeeping) plus nothing for the sink.
  TaskDef small{.name = "src", .op_type = "source"};
  small.blobs = {BlobProto("x", DT_FLOAT32, {16})};
  SessionOptions at_limit;
  at_limit.max_register_bytes = 2 * kRegisterOverheadBytes;
  CHECK(Session::Create(MustBuild({small, sink}, 1), at_limit).ok());
  SessionOptions below;
  below.max_register_bytes = 2 * kRegisterOverheadBytes - 1;
  auto refused = Session::Create(MustBuild({small, sink}, 1), below);
  CHECK(absl::IsInvalidArgument(refused.status()));
}

// Two tasks each holding what the other needs: the report names the cycle.
TEST_CASE("hang report: a cycle of waits is named", "[diagnosis]") {
  Plan plan;
  for (int t = 1; t <= 2; ++t) {
    TaskProto* task = plan.add_task();
    task->set_task_id(t);
    task->set_name(t == 1 ? "a" : "b");
    task->mutable_kernel()->set_op_type("identity");
    RegisterDescProto& out = (*task->mutable_produced_regst_desc())["out"];
    out.set_regst_desc_id(t);
    out.set_register_num(1);
    (*task->mutable_consumed_regst_desc_id())["in"].add_regst_desc_id(3 - t);
  }
  HangFacts facts;
  facts.reason = "test";
  facts.kernel_running_ns = {-1, -1};
  facts.streams = {"m0/cpu0/s0", "m0/cpu0/s1"};
  for (int t = 1; t <= 2; ++t) {
    ActorSnapshot snapshot;
    snapshot.state = ActorSnapshot::State::kActing;
    snapshot.acts = 4;
    // Each has the other's register unread and no free register of its own.
    snapshot.inputs = {{3 - t, "in", 1, false}};
    snapshot.outputs = {{t, "out", 0, 1}};
    facts.snapshots.push_back(snapshot);
  }
  std::string report = HangReport(plan, facts);
  INFO(report);
  CHECK(absl::StrContains(report, "cycle of waits: 'a' -> 'b' -> 'a'"));
  CHECK(absl::StrContains(report, "1 unread at 'b' (which waits too)"));
}

}  // namespace
}  // namespace actorflow::internal
