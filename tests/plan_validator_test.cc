// Every validation error, each on a plan that is valid but for one mistake,
// checked to the letter: these messages are what users read.
#include "actorflow/plan_validator.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "actorflow/cuda_api.h"
#include "actorflow/plan_loader.h"
#include "plan/plan_builder.h"

namespace actorflow::internal {
namespace {

// source (1) -> scale (2) -> sink (3), all consistent.
constexpr char kValid[] = R"pb(
  total_piece_num: 10
  task {
    task_id: 1
    name: "src"
    kernel { op_type: "source" }
    produced_regst_desc {
      key: "out"
      value {
        regst_desc_id: 10
        producer_task_id: 1
        consumer_task_id: [ 2 ]
        register_num: 2
        elem_cnt: 4
      }
    }
  }
  task {
    task_id: 2
    name: "mid"
    stream { stream_index: 1 }
    kernel {
      op_type: "scale"
      attr {
        key: "factor"
        value { f: 2 }
      }
    }
    consumed_regst_desc_id {
      key: "in"
      value { regst_desc_id: [ 10 ] }
    }
    produced_regst_desc {
      key: "out"
      value {
        regst_desc_id: 20
        producer_task_id: 2
        consumer_task_id: [ 3 ]
        register_num: 2
        elem_cnt: 4
      }
    }
  }
  task {
    task_id: 3
    name: "sink"
    kernel { op_type: "checksum" }
    consumed_regst_desc_id {
      key: "in"
      value { regst_desc_id: [ 20 ] }
    }
  }
)pb";

Plan Valid() {
  auto plan = ParseTextPlan(kValid, "valid");
  REQUIRE(plan.ok());
  return *plan;
}

RegisterDescProto& Out(Plan& plan, int task) {
  return (*plan.mutable_task(task)->mutable_produced_regst_desc())["out"];
}

// The single problem `plan` has.
std::string OnlyProblem(const Plan& plan) {
  std::vector<std::string> problems = ValidatePlan(plan);
  for (const std::string& p : problems) INFO(p);
  REQUIRE(problems.size() == 1);
  return problems[0];
}

TEST_CASE("the reference plan is valid", "[validator]") {
  CHECK(ValidatePlan(Valid()).empty());
}

TEST_CASE("plan-level errors", "[validator]") {
  SECTION("no task") { CHECK(OnlyProblem(Plan()) == "plan: has no task"); }
  SECTION("negative total_piece_num") {
    Plan plan = Valid();
    plan.set_total_piece_num(-1);
    CHECK(OnlyProblem(plan) == "plan.total_piece_num: must be >= 0, got -1");
  }
}

TEST_CASE("task ids and names", "[validator]") {
  Plan plan = Valid();
  SECTION("duplicate task_id") {
    *plan.add_task() = plan.task(2);
    plan.mutable_task(3)->set_name("sink2");
    std::vector<std::string> problems = ValidatePlan(plan);
    REQUIRE_FALSE(problems.empty());
    CHECK(problems[0] ==
          "task 'sink2' (task_id 3): task_id: duplicate, also used by task "
          "'sink' (task_id 3)");
  }
  SECTION("duplicate name") {
    plan.mutable_task(2)->set_name("mid");
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 3): name: duplicate, also used by task 'mid' "
          "(task_id 2)");
  }
  SECTION("empty name") {
    plan.mutable_task(2)->set_name("");
    CHECK(OnlyProblem(plan) == "task '' (task_id 3): name: must not be empty");
  }
}

TEST_CASE("kernels", "[validator]") {
  Plan plan = Valid();
  SECTION("unknown op_type") {
    plan.mutable_task(1)->mutable_kernel()->set_op_type("sclae");
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 2): kernel.op_type: unknown op_type 'sclae' "
          "(known: add, cast, checksum, concat, fail, feed, fetch, head, "
          "identity, normalize, scale, slice, source, spin)");
  }
  SECTION("missing attribute") {
    plan.mutable_task(1)->mutable_kernel()->mutable_attr()->clear();
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 2): kernel.attr['factor']: missing; scale "
          "needs a float (f)");
  }
  SECTION("wrongly typed attribute") {
    (*plan.mutable_task(1)->mutable_kernel()->mutable_attr())["factor"].set_s(
        "two");
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 2): kernel.attr['factor']: must be a float "
          "(f), got a string (s)");
  }
  SECTION("wrongly typed optional attribute") {
    (*plan.mutable_task(0)->mutable_kernel()->mutable_attr())["step"].set_i(2);
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): kernel.attr['step']: must be a float (f), "
          "got an int (i)");
  }
  SECTION("int attribute given as float") {
    plan.mutable_task(1)->mutable_kernel()->set_op_type("fail");
    (*plan.mutable_task(1)->mutable_kernel()->mutable_attr())["at_piece"].set_f(
        2.5);
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 2): kernel.attr['at_piece']: must be an int "
          "(i), got a float (f)");
  }
  SECTION("sink with an output") {
    plan.mutable_task(1)->mutable_kernel()->set_op_type("checksum");
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 2): produced_regst_desc['out']: checksum "
          "produces nothing");
  }
  SECTION("unequal sizes") {
    Out(plan, 1).set_elem_cnt(8);
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 2): produced_regst_desc['out'] (regst_desc 20): "
          "elem_cnt: is 8, but shape inference gives 4 elements (data: "
          "float32 [4])");
  }
  SECTION("input under another name") {
    auto* consumed = plan.mutable_task(2)->mutable_consumed_regst_desc_id();
    (*consumed)["input"] = (*consumed)["in"];
    consumed->erase("in");
    CHECK(OnlyProblem(plan) ==
          "task 'sink' (task_id 3): consumed_regst_desc_id['input']: "
          "checksum consumes only \"in\"");
  }
}

TEST_CASE("register descriptors", "[validator]") {
  Plan plan = Valid();
  SECTION("register_num < 1") {
    Out(plan, 0).set_register_num(0);
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).register_num: must be >= 1, got 0");
  }
  SECTION("elem_cnt < 0") {
    Out(plan, 1).set_elem_cnt(-4);
    Out(plan, 0).set_elem_cnt(-4);
    std::vector<std::string> problems = ValidatePlan(plan);
    REQUIRE(problems.size() >= 2);
    CHECK(problems[0] ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).elem_cnt: must be >= 0, got -4");
  }
  SECTION("a consumed id nobody produces") {
    (*plan.mutable_task(2)->mutable_consumed_regst_desc_id())["in"]
        .set_regst_desc_id(0, 99);
    std::vector<std::string> problems = ValidatePlan(plan);
    REQUIRE(problems.size() == 2);
    CHECK(problems[0] ==
          "task 'sink' (task_id 3): consumed_regst_desc_id['in']: "
          "regst_desc 99 is produced by no task");
    // ...and regst_desc 20's consumer list now names a task that does not
    // consume it.
    CHECK(problems[1] ==
          "task 'mid' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20).consumer_task_id: lists task_id 3, but task 'sink' (task_id "
          "3) does not consume it");
  }
  SECTION("duplicate regst_desc_id") {
    Out(plan, 1).set_regst_desc_id(10);
    std::vector<std::string> problems = ValidatePlan(plan);
    REQUIRE_FALSE(problems.empty());
    CHECK(problems[0] ==
          "task 'mid' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "10): regst_desc_id: duplicate, also produced by task 'src' "
          "(task_id 1) as 'out'");
  }
  SECTION("producer_task_id disagrees") {
    Out(plan, 0).set_producer_task_id(2);
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).producer_task_id: is 2, but task 'src' (task_id 1) produces "
          "it");
  }
  SECTION("consumer list misses a consumer") {
    Out(plan, 0).clear_consumer_task_id();
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).consumer_task_id: task 'mid' (task_id 2) consumes it but is "
          "not listed");
  }
  SECTION("consumer list names a task that does not consume") {
    Out(plan, 0).add_consumer_task_id(3);
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).consumer_task_id: lists task_id 3, but task 'sink' (task_id "
          "3) does not consume it");
  }
  SECTION("consumer list names no task") {
    Out(plan, 0).add_consumer_task_id(42);
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).consumer_task_id: lists task_id 42, which is no task of the "
          "plan");
  }
  SECTION("consumer listed twice") {
    Out(plan, 0).add_consumer_task_id(2);
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).consumer_task_id: lists task_id 2 twice");
  }
  SECTION("consumed twice by one task") {
    (*plan.mutable_task(2)->mutable_consumed_regst_desc_id())["in"]
        .add_regst_desc_id(20);
    CHECK(OnlyProblem(plan) ==
          "task 'sink' (task_id 3): consumed_regst_desc_id['in']: "
          "regst_desc 20 is consumed twice by this task");
  }
}

TEST_CASE("cycles are refused, naming the tasks on them", "[validator]") {
  Plan plan = Valid();
  // mid also consumes the sink's new output: mid -> sink -> mid.
  plan.mutable_task(2)->mutable_kernel()->set_op_type("identity");
  RegisterDescProto& back = Out(plan, 2);
  back.set_regst_desc_id(30);
  back.set_producer_task_id(3);
  back.add_consumer_task_id(2);
  back.set_register_num(1);
  back.set_elem_cnt(4);
  plan.mutable_task(1)->mutable_kernel()->set_op_type("add");
  plan.mutable_task(1)->mutable_kernel()->mutable_attr()->clear();
  (*plan.mutable_task(1)->mutable_consumed_regst_desc_id())["in"]
      .add_regst_desc_id(30);
  CHECK(OnlyProblem(plan) ==
        "plan: cycle: 'mid' -> 'sink' -> 'mid' (each waits on the one before "
        "it; a cycle needs an initial register on one of its edges)");

  SECTION("a task consuming its own output") {
    Plan self = Valid();
    Out(self, 1).add_consumer_task_id(2);
    self.mutable_task(1)->mutable_kernel()->set_op_type("add");
    self.mutable_task(1)->mutable_kernel()->mutable_attr()->clear();
    (*self.mutable_task(1)->mutable_consumed_regst_desc_id())["in"]
        .add_regst_desc_id(20);
    CHECK(OnlyProblem(self) ==
          "plan: cycle: 'mid' -> 'mid' (each waits on the one before it; a "
          "cycle needs an initial register on one of its edges)");
  }
}

// As on a machine without a usable GPU, wherever the test runs.
absl::Status NoDevice(int) {
  return absl::UnavailableError("no usable CUDA device: (test)");
}

TEST_CASE("streams and memory cases this build or machine cannot serve",
          "[validator]") {
  Plan plan = Valid();
  SECTION("machine_id") {
    plan.mutable_task(1)->mutable_stream()->set_machine_id(1);
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 2): stream.machine_id: must be 0 in one "
          "process (a plan over machines 0..N-1 runs as N processes: "
          "actorflow launch --nproc=N, or actorflow run with WORLD_SIZE and "
          "RANK), got 1");
  }
  SECTION("negative stream index") {
    plan.mutable_task(1)->mutable_stream()->set_stream_index(-1);
    CHECK(OnlyProblem(plan) ==
          "task 'mid' (task_id 2): stream: device_index and stream_index "
          "must be >= 0");
  }
  SECTION("GPU stream") {
    plan.mutable_task(1)->mutable_stream()->set_device_type(DeviceKinds::GPU);
    std::vector<std::string> problems = ValidatePlan(plan, NoDevice);
    REQUIRE(problems.size() == 3);
    CHECK(problems[0] ==
          std::string("task 'mid' (task_id 2): stream.device_type GPU (device "
                      "0): ") +
              (cuda::BuiltWithCuda()
                   ? "this machine cannot serve it: no usable CUDA device: "
                     "(test)"
                   : "this build has no CUDA support (no CUDA toolkit was "
                     "found when it was built)"));
    // Its registers are still in host memory, which it cannot address.
    CHECK(problems[1] ==
          "task 'mid' (task_id 2): consumed_regst_desc_id['in']: regst_desc "
          "10 is in host memory, but this task runs on a GPU stream of device "
          "0 and reads GPU memory of device 0 (h2d and d2h tasks move data "
          "between host and device)");
    CHECK(problems[2] ==
          "task 'mid' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20).mem_case: is host memory, but this task runs on a GPU stream of "
          "device 0 and writes GPU memory of device 0 (h2d and d2h tasks move "
          "data between host and device)");
  }
  SECTION("host_async on a GPU stream") {
    plan.mutable_task(1)->mutable_stream()->set_device_type(DeviceKinds::GPU);
    plan.mutable_task(1)->mutable_stream()->set_host_async(true);
    std::vector<std::string> problems = ValidatePlan(plan, NoDevice);
    REQUIRE(problems.size() == 4);
    CHECK(problems[1] ==
          "task 'mid' (task_id 2): stream.host_async: applies to CPU streams "
          "only (a GPU stream is asynchronous already)");
  }
  SECTION("host_async on a CPU stream is valid") {
    plan.mutable_task(1)->mutable_stream()->set_host_async(true);
    CHECK(ValidatePlan(plan).empty());
  }
  SECTION("GPU memory case") {
    Out(plan, 0).mutable_mem_case()->set_device_type(DeviceKinds::GPU);
    Out(plan, 0).mutable_mem_case()->set_device_index(3);
    std::vector<std::string> problems = ValidatePlan(plan, NoDevice);
    REQUIRE(problems.size() == 3);
    CHECK(problems[0].rfind(
              "task 'src' (task_id 1): produced_regst_desc['out'] "
              "(regst_desc 10).mem_case.device_type GPU (device 3): ",
              0) == 0);
    CHECK(problems[1] ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).mem_case: is GPU memory of device 3, but this task runs on a "
          "CPU stream and writes host memory (a d2h task on a GPU stream "
          "brings data to the host)");
    CHECK(problems[2] ==
          "task 'mid' (task_id 2): consumed_regst_desc_id['in']: regst_desc "
          "10 is in GPU memory of device 3, but this task runs on a CPU "
          "stream and reads host memory (a d2h task on a GPU stream brings "
          "data to the host)");
  }
  SECTION("pinned host memory without a device") {
    if (cuda::DeviceAvailable(0).ok()) return;  // servable there
    Out(plan, 0).mutable_mem_case()->set_pinned(true);
    CHECK(OnlyProblem(plan).rfind(
              "task 'src' (task_id 1): produced_regst_desc['out'] "
              "(regst_desc 10).mem_case.pinned: pinned host memory needs a "
              "usable CUDA device: ",
              0) == 0);
  }
}

// src (CPU) -> up: h2d (GPU 0, s1) -> mid: scale (GPU 0, s0) -> down: d2h
// (GPU 0, s2) -> sink (CPU): valid wherever device 0 is usable. Task ids
// 1..5, each task's output regst_desc 10 * id.
Plan GpuPlan() {
  TaskDef mid{.name = "mid", .op_type = "scale", .inputs = {"up"}, .gpu = true};
  mid.attrs["factor"] = FloatAttr(2);
  auto plan = BuildPlan({{.name = "src", .op_type = "source"},
                         {.name = "up",
                          .op_type = "h2d",
                          .inputs = {"src"},
                          .stream_index = 1,
                          .gpu = true},
                         mid,
                         {.name = "down",
                          .op_type = "d2h",
                          .inputs = {"mid"},
                          .stream_index = 2,
                          .gpu = true},
                         {.name = "sink",
                          .op_type = "checksum",
                          .inputs = {"down"},
                          .has_output = false}},
                        10);
  REQUIRE(plan.ok());
  return *plan;
}

TEST_CASE("register placement and kernels on GPU streams", "[validator]") {
  if (!cuda::BuiltWithCuda()) {
    std::printf(
        "GPU placement rules not checked: this build has no GPU "
        "kernels\n");
    return;
  }
  // As on a machine with a usable device 0 (and 1).
  DeviceProbe usable = [](int index) {
    return index <= 1 ? absl::OkStatus()
                      : absl::UnavailableError("no such device");
  };
  Plan plan = GpuPlan();
  auto problems_of = [&](const Plan& p) {
    std::vector<std::string> problems = ValidatePlan(p, usable);
    for (const std::string& problem : problems) INFO(problem);
    return problems;
  };
  SECTION("the plan is valid where the device is") {
    CHECK(problems_of(plan).empty());
  }
  SECTION("a GPU kernel reading host memory") {
    // mid reads the source's host register directly, skipping the copy.
    (*plan.mutable_task(2)->mutable_consumed_regst_desc_id())["in"]
        .set_regst_desc_id(0, 10);
    Out(plan, 0).add_consumer_task_id(3);
    Out(plan, 1).clear_consumer_task_id();
    auto problems = problems_of(plan);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] ==
          "task 'mid' (task_id 3): consumed_regst_desc_id['in']: regst_desc "
          "10 is in host memory, but this task runs on a GPU stream of device "
          "0 and reads GPU memory of device 0 (h2d and d2h tasks move data "
          "between host and device)");
  }
  SECTION("a CPU kernel reading GPU memory") {
    Out(plan, 3).mutable_mem_case()->set_device_type(DeviceKinds::GPU);
    auto problems = problems_of(plan);
    REQUIRE(problems.size() == 2);
    CHECK(problems[0] ==
          "task 'down' (task_id 4): produced_regst_desc['out'] (regst_desc "
          "40).mem_case: is GPU memory of device 0, but this task runs on a "
          "GPU stream of device 0 and writes host memory (h2d and d2h tasks "
          "move data between host and device)");
    CHECK(problems[1] ==
          "task 'sink' (task_id 5): consumed_regst_desc_id['in']: regst_desc "
          "40 is in GPU memory of device 0, but this task runs on a CPU "
          "stream and reads host memory (a d2h task on a GPU stream brings "
          "data to the host)");
  }
  SECTION("memory of another device") {
    plan.mutable_task(2)->mutable_stream()->set_device_index(1);
    auto problems = problems_of(plan);
    REQUIRE(problems.size() == 2);
    CHECK(problems[0] ==
          "task 'mid' (task_id 3): consumed_regst_desc_id['in']: regst_desc "
          "20 is in GPU memory of device 0, but this task runs on a GPU stream "
          "of device 1 and reads GPU memory of device 1 (h2d and d2h tasks "
          "move data between host and device)");
  }
  SECTION("a copy kernel on a CPU stream") {
    plan.mutable_task(1)->mutable_stream()->set_device_type(DeviceKinds::CPU);
    auto problems = problems_of(plan);
    REQUIRE(problems.size() == 2);
    CHECK(
        problems[1] ==
        "task 'up' (task_id 2): kernel.op_type: 'h2d' has no cpu kernel; it "
        "runs on gpu streams (cpu kernels: add, cast, checksum, concat, fail, "
        "feed, fetch, head, identity, normalize, scale, slice, source, spin)");
  }
  SECTION("a CPU-only kernel on a GPU stream") {
    plan.mutable_task(2)->mutable_kernel()->set_op_type("fail");
    auto problems = problems_of(plan);
    REQUIRE(problems.size() == 1);
    CHECK(problems[0] ==
          "task 'mid' (task_id 3): kernel.op_type: 'fail' has no gpu kernel; "
          "it runs on cpu streams (gpu kernels: add, cast, checksum, d2h, h2d, "
          "head, identity, normalize, scale, source, spin)");
  }
  SECTION("a device this machine lacks") {
    plan.mutable_task(2)->mutable_stream()->set_device_index(2);
    auto problems = problems_of(plan);
    REQUIRE(problems.size() == 3);
    CHECK(problems[0] ==
          "task 'mid' (task_id 3): stream.device_type GPU (device 2): this "
          "machine cannot serve it: no such device");
  }
}

TEST_CASE("several problems are all reported", "[validator]") {
  Plan plan = Valid();
  Out(plan, 0).set_register_num(0);
  plan.mutable_task(1)->mutable_kernel()->set_op_type("nope");
  plan.set_total_piece_num(-5);
  CHECK(ValidatePlan(plan).size() == 3);
}

TEST_CASE("plan files: text, binary and their errors", "[validator]") {
  SECTION("text syntax error names file, line and column") {
    auto plan = ParseTextPlan("task { task_id: 1\n  name: }", "bad.pbtxt");
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message().rfind("bad.pbtxt:2:", 0) == 0);
  }
  SECTION("unknown extension") {
    auto plan = LoadPlan("plan.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().message() ==
          "plan.yaml: unknown plan format; name it .pbtxt (text) or .pb "
          "(binary)");
  }
  SECTION("missing file") {
    auto plan = LoadPlan("/nonexistent/plan.pbtxt");
    REQUIRE_FALSE(plan.ok());
    CHECK(absl::IsNotFound(plan.status()));
    CHECK(plan.status().message() ==
          "/nonexistent/plan.pbtxt: cannot open: No such file or directory");
  }
  SECTION("binary round trip and garbage") {
    std::string dir =
        std::getenv("TEST_TMPDIR") ? std::getenv("TEST_TMPDIR") : "/tmp";
    std::string good = dir + "/valid.pb";
    std::string bad = dir + "/garbage.pb";
    {
      std::ofstream out(good, std::ios::binary);
      out << Valid().SerializeAsString();
      std::ofstream junk(bad, std::ios::binary);
      junk << "\xff\xff\xff garbage";
    }
    auto plan = LoadPlan(good);
    REQUIRE(plan.ok());
    CHECK(plan->task_size() == 3);
    CHECK(ValidatePlan(*plan).empty());
    auto broken = LoadPlan(bad);
    REQUIRE_FALSE(broken.ok());
    CHECK(broken.status().message() ==
          bad + ": not a binary Plan (protobuf parse failed)");
  }
}

}  // namespace
}  // namespace actorflow::internal
