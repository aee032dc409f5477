// The job compiler: the tasks each insertion rule makes, boxing between
// every pair of signatures and device counts run against the job evaluated
// in sequence, register_num and budgets, and its errors word for word
// (random jobs: job_random_test.cc, in the same test).
#include "actorflow/job_compiler.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>
#include <cstdint>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/shared_block.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/cuda_api.h"
#include "actorflow/job_builder.h"
#include "actorflow/session.h"
#include "compiler/plan_or_job.h"
#include "google/protobuf/text_format.h"
#include "net/plan_partition.h"
#include "plan/plan_builder.h"
#include "tests/job_test_kernels.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

using testing::CompileError;
using testing::MustCompile;
using testing::RunPlan;
using testing::TestKernels;

BlobDescProto F64(std::vector<int64_t> shape) {
  return BlobProto("data", DT_FLOAT64, std::move(shape));
}

// GPU kernels are built in, in a build with or without CUDA (then they
// fail at run time), but not in the clang build (--config=asan...).
bool HasGpuKernels() {
  return KernelRegistry::Get().Has("h2d", DeviceKind::kGpu);
}

const TaskProto& Task(const Plan& plan, const std::string& name) {
  for (const TaskProto& task : plan.task()) {
    if (task.name() == name) return task;
  }
  FAIL("no task named " << name);
  return plan.task(0);
}

const RegisterDescProto& Out(const Plan& plan, const std::string& task,
                             const std::string& output = "out") {
  return Task(plan, task).produced_regst_desc().at(output);
}

std::set<std::string> Names(const Plan& plan) {
  std::set<std::string> names;
  for (const TaskProto& task : plan.task()) names.insert(task.name());
  return names;
}

TEST_CASE("the diamond job compiles to the quick start's plan and result") {
  absl::StatusOr<LoadedPlan> loaded =
      LoadPlanOrJob("examples/jobs/diamond.pbtxt");
  INFO(loaded.status().message());
  REQUIRE(loaded.ok());
  REQUIRE(loaded->job.has_value());
  const Plan& plan = loaded->plan;
  CHECK(Names(plan) ==
        std::set<std::string>{"source", "double", "triple", "add", "checksum"});
  CHECK(loaded->job->copies == 0);
  CHECK(loaded->job->boxing == 0);
  // One device, one stage: one stream.
  for (const TaskProto& task : plan.task()) {
    CHECK(task.stream().stream_index() == 0);
  }
  CHECK(loaded->job->streams == 1);
  CHECK(Task(plan, "add")
            .consumed_regst_desc_id()
            .at("in")
            .regst_desc_id_size() == 2);
  const auto sinks = RunPlan(plan, {});
  CHECK(sinks.at("checksum").checksum == 640640000.0);
  CHECK(sinks.at("checksum").pieces == 1000);

  // Chains dealt to 4 streams: source, double, triple, add -> checksum (one
  // producer that feeds only its one consumer, on the same device).
  absl::StatusOr<Job> job = LoadJob("examples/jobs/diamond.pbtxt");
  REQUIRE(job.ok());
  job->set_streams_per_device(4);
  const CompiledJob dealt = MustCompile(*job);
  CHECK(Task(dealt.plan, "source").stream().stream_index() == 0);
  CHECK(Task(dealt.plan, "double").stream().stream_index() == 1);
  CHECK(Task(dealt.plan, "triple").stream().stream_index() == 2);
  CHECK(Task(dealt.plan, "add").stream().stream_index() == 3);
  CHECK(Task(dealt.plan, "checksum").stream().stream_index() == 3);
  CHECK(dealt.report.streams == 4);
  CHECK(RunPlan(dealt.plan, {}).at("checksum").checksum == 640640000.0);

  // The same file through the plan loader's other door: a plan stays one.
  absl::StatusOr<LoadedPlan> quickstart =
      LoadPlanOrJob("examples/plans/quickstart.pbtxt");
  REQUIRE(quickstart.ok());
  CHECK_FALSE(quickstart->job.has_value());
}

TEST_CASE("inputs name ops and outputs with dots in them") {
  JobBuilder job(3);
  job.Op("s", "source").Shape({2});
  job.Op("s.v2", "source").Shape({2}).Attr("value", 10.0);
  job.Op("whole", "identity").Input("s.v2");        // op "s.v2"
  job.Op("longest", "identity").Input("s.v2.out");  // "s.v2", not "s"
  job.Op("short", "identity").Input("s.out");
  job.Op("sum", "add").Input("whole").Input("longest").Input("short");
  job.Op("sink", "checksum").Input("sum");
  const CompiledJob compiled = MustCompile(job.job());
  auto producer = [&](const std::string& task) {
    const int64_t id = Task(compiled.plan, task)
                           .consumed_regst_desc_id()
                           .at("in")
                           .regst_desc_id(0);
    return compiled.plan.task(static_cast<int>(id / 100) - 1).name();
  };
  CHECK(producer("whole") == "s.v2");
  CHECK(producer("longest") == "s.v2");
  CHECK(producer("short") == "s");
  // Per piece p: 2 * ((10 + p) + (10 + p) + p), over p = 0, 1, 2.
  CHECK(RunPlan(compiled.plan, {}).at("sink").checksum == 2 * (3 * 20 + 3 * 3));
}

TEST_CASE("replicas: towers of one device, streams of their own, one copy") {
  JobBuilder job(4);
  job.Op("src", "source").Shape({8});
  job.Op("scaled", "scale")
      .Input("src")
      .Attr("factor", 2.0)
      .Place(DeviceKind::kCpu, {0})
      .Replicas(3);
  job.Op("sink", "checksum").Input("scaled");
  CompiledJob compiled = MustCompile(job.job());
  // Three towers of CPU device 0 on streams 0, 1, 2 (the source and sink
  // share tower 0's); the rows are split over them and joined again.
  for (int k = 0; k < 3; ++k) {
    const TaskProto& task = Task(compiled.plan, absl::StrCat("scaled/", k));
    CHECK(task.stream().device_index() == 0);
    CHECK(task.stream().stream_index() == k);
  }
  CHECK(Task(compiled.plan, "scaled.out:concat@cpu0").stream().stream_index() ==
        0);
  CHECK(compiled.report.streams == 3);
  // 8 elements of 2p over pieces 0..3.
  CHECK(RunPlan(compiled.plan, {}).at("sink").checksum == 2 * 8 * 6);
  job.job().mutable_op(1)->mutable_placement()->set_replicas(-1);
  CHECK(CompileError(job.job()) ==
        "op 'scaled': placement.replicas -1 is negative");

  if (!HasGpuKernels()) {
    WARN("this build has no GPU kernels: GPU towers not compiled");
    return;
  }
  // Two towers of GPU 0 read one copy of each input part; their partial
  // sums, read by towers of the same GPU, are added on it.
  JobBuilder gpu(4);
  gpu.Op("a", "source").Shape({4, 6});
  gpu.Op("b", "source").Shape({6, 3}).Attr("value", 2.0);
  gpu.Op("m", "matmul")
      .Input("a=a")
      .InputSplit(1)
      .Input("b=b")
      .InputSplit(0)
      .Place(DeviceKind::kGpu, {0})
      .Replicas(2);
  gpu.Op("r", "relu")
      .Input("m")
      .InputBroadcast()
      .Place(DeviceKind::kGpu, {0})
      .Replicas(2);
  gpu.Op("sink", "checksum").Input("r");
  compiled = MustCompile(gpu.job());
  CHECK(Names(compiled.plan).count("m.out:add@gpu0") == 1);
  int h2d = 0;
  for (const TaskProto& task : compiled.plan.task()) {
    h2d += task.kernel().op_type() == "h2d";
  }
  CHECK(h2d == 4);  // a and b, sliced on the host per tower
  CHECK(Task(compiled.plan, "m/1").stream().stream_index() == 1);
  CHECK(Task(compiled.plan, "m.out:add@gpu0").stream().device_type() ==
        DeviceKinds::GPU);
  if (cuda::DeviceAvailable(0).ok()) {
    // Every element of a b is 6 p (2 + p): 12 of them, pieces 0..3.
    CHECK(RunPlan(compiled.plan, {}).at("sink").checksum == 72 * (3 + 8 + 15));
  }
}

TEST_CASE("copies: h2d onto a GPU, d2h off it, on streams of their own") {
  if (!HasGpuKernels()) {
    WARN("this build has no GPU kernels: nothing to copy to");
    return;
  }
  JobBuilder job(4);
  job.Op("src", "source").Shape({8});
  job.Op("gpu_scale", "scale")
      .Input("src")
      .Attr("factor", 2.0)
      .Place(DeviceKind::kGpu, {1});
  job.Op("sink", "checksum").Input("gpu_scale");
  const CompiledJob compiled = MustCompile(job.job());
  const Plan& plan = compiled.plan;
  CHECK(Names(plan) == std::set<std::string>{"src", "gpu_scale", "sink",
                                             "src@gpu1", "gpu_scale@cpu"});
  const TaskProto& h2d = Task(plan, "src@gpu1");
  CHECK(h2d.kernel().op_type() == "h2d");
  CHECK(h2d.stream().device_type() == DeviceKinds::GPU);
  CHECK(h2d.stream().device_index() == 1);
  CHECK(h2d.stream().stream_index() == 1);  // after the compute stream
  const TaskProto& d2h = Task(plan, "gpu_scale@cpu");
  CHECK(d2h.kernel().op_type() == "d2h");
  CHECK(d2h.stream().device_index() == 1);
  CHECK(d2h.stream().stream_index() == 2);
  CHECK(d2h.produced_regst_desc().at("out").mem_case().device_type() ==
        DeviceKinds::CPU);
  CHECK(Task(plan, "gpu_scale")
            .produced_regst_desc()
            .at("out")
            .mem_case()
            .device_index() == 1);
  CHECK(compiled.report.copies == 2);
  CHECK(compiled.report.inserted ==
        std::vector<std::string>{
            "h2d 'src@gpu1' for op 'gpu_scale' input 0 ('src')",
            "d2h 'gpu_scale@cpu' for op 'sink' input 0 ('gpu_scale')"});
}

TEST_CASE(
    "boxing: concat, slice and add where placements or signatures differ") {
  KernelBindings kernels = TestKernels();
  SECTION("split over 2 devices into one: a concat") {
    JobBuilder job(3);
    job.Op("src", "source").Blob(F64({4, 3})).Place(DeviceKind::kCpu, {0, 1});
    job.Op("sink", "checksum").Input("src");
    const Plan plan = MustCompile(job.job()).plan;
    CHECK(Names(plan) == std::set<std::string>{"src/0", "src/1", "sink",
                                               "src.out:concat@cpu0"});
    CHECK(
        Task(plan, "src/0").produced_regst_desc().at("out").blob(0).shape(0) ==
        2);
    CHECK(Task(plan, "src.out:concat@cpu0").kernel().attr().at("axis").i() ==
          0);
    // source: every element of piece p is p (value 0, step 1).
    CHECK(RunPlan(plan, {}).at("sink").checksum == 12.0 * (0 + 1 + 2));
  }
  SECTION("one device into a split over 3: a slice per device") {
    JobBuilder job(2);
    job.Op("src", "test_ramp").Blob(F64({7}));
    job.Op("id", "identity").Input("src").Place(DeviceKind::kCpu, {0, 1, 2});
    job.Op("back", "identity").Input("id").InputSplit(0);
    job.Op("sink", "test_weighted").Input("back");
    const Plan plan = MustCompile(job.job(), &kernels).plan;
    for (int j = 0; j < 3; ++j) {
      const TaskProto& slice =
          Task(plan, absl::StrCat("src:slice(0)", j, "of3@cpu", j));
      CHECK(slice.kernel().op_type() == "slice");
      CHECK(slice.kernel().attr().at("index").i() == j);
    }
    double expected = 0;
    for (int p = 0; p < 2; ++p) {
      for (int i = 0; i < 7; ++i) expected += (i + 1) * (100.0 * p + i);
    }
    CHECK(RunPlan(plan, kernels).at("sink").checksum == expected);
  }
  SECTION("partial sums over 2 devices into one: an add") {
    JobBuilder job(2);
    job.Op("src", "source")
        .Blob(F64({5}))
        .Place(DeviceKind::kCpu, {0, 1})
        .OutputSignature("out", PartialSumSignature());
    job.Op("sink", "checksum").Input("src");
    const Plan plan = MustCompile(job.job()).plan;
    CHECK(Task(plan, "src.out:add@cpu0").kernel().op_type() == "add");
    // Each device holds the whole source; their sum is twice it.
    CHECK(RunPlan(plan, {}).at("sink").checksum == 2 * 5 * (0 + 1));
  }
  SECTION("on another machine: no copy, the runtime moves host registers") {
    JobBuilder job(2);
    job.Op("src", "source").Shape({4});
    job.Op("far", "scale")
        .Input("src")
        .Attr("factor", 2.0)
        .Place(DeviceKind::kCpu, {0}, {1});
    job.Op("sink", "checksum").Input("far").Place(DeviceKind::kCpu, {0}, {1});
    const Plan plan = MustCompile(job.job()).plan;
    CHECK(Names(plan) == std::set<std::string>{"src", "far", "sink"});
    CHECK(Task(plan, "far").stream().machine_id() == 1);
    absl::StatusOr<net::LocalPlan> rank1 = net::PartitionPlan(plan, 1, 2);
    INFO(rank1.status().message());
    REQUIRE(rank1.ok());
    CHECK(rank1->recvs.size() == 1);
  }
}

// What crosses between machines: "producer task -> rank" per register.
std::set<std::string> Crossings(const Plan& plan, int world_size) {
  absl::StatusOr<std::vector<net::NetEdge>> edges =
      net::FindNetEdges(plan, world_size);
  INFO(edges.status().message());
  REQUIRE(edges.ok());
  std::set<std::string> crossings;
  for (const net::NetEdge& edge : *edges) {
    for (const TaskProto& task : plan.task()) {
      for (const auto& [key, desc] : task.produced_regst_desc()) {
        if (desc.regst_desc_id() == edge.regst_desc_id) {
          crossings.insert(absl::StrCat(task.name(), " -> ", edge.dst_rank));
        }
      }
    }
  }
  return crossings;
}

TEST_CASE(
    "over machines, partial sums and splits cross as little as they can") {
  SECTION("partial sums read whole on both machines: each adds the parts") {
    for (Job::PartialSumReduction how :
         {Job::PARTIAL_SUM_AUTO, Job::PARTIAL_SUM_GATHER}) {
      JobBuilder job(2);
      job.Op("src", "source")
          .Blob(F64({5}))
          .Place(DeviceKind::kCpu, {0}, {0, 1})
          .OutputSignature("out", PartialSumSignature());
      job.Op("use", "checksum")
          .Input("src")
          .InputBroadcast()
          .Place(DeviceKind::kCpu, {0}, {0, 1});
      Job stated = job.job();
      stated.set_partial_sum_reduction(how);
      const Plan plan = MustCompile(stated).plan;
      INFO(Job::PartialSumReduction_Name(how));
      if (how == Job::PARTIAL_SUM_AUTO) {
        // Both parts cross at once, one each way; no sum crosses back.
        CHECK(Task(plan, "src.out:add@m1.cpu0").stream().machine_id() == 1);
        CHECK(Crossings(plan, 2) ==
              std::set<std::string>{"src/0 -> 1", "src/1 -> 0"});
        // Each add reads the parts in part order: the same bits.
        for (const char* add : {"src.out:add@cpu0", "src.out:add@m1.cpu0"}) {
          const auto& in = Task(plan, add).consumed_regst_desc_id().at("in");
          REQUIRE(in.regst_desc_id_size() == 2);
          CHECK(in.regst_desc_id(0) == Out(plan, "src/0").regst_desc_id());
          CHECK(in.regst_desc_id(1) == Out(plan, "src/1").regst_desc_id());
        }
      } else {
        CHECK(Names(plan).count("src.out:add@m1.cpu0") == 0);
        CHECK(Crossings(plan, 2) ==
              std::set<std::string>{"src/1 -> 0", "src.out:add@cpu0 -> 1"});
      }
    }
  }
  SECTION("partial sums over three machines: each reader concatenates") {
    JobBuilder job(2);
    job.Op("src", "source")
        .Blob(F64({6}))
        .Place(DeviceKind::kCpu, {0}, {0, 1, 2})
        .OutputSignature("out", PartialSumSignature());
    job.Op("use", "checksum")
        .Input("src")
        .InputBroadcast()
        .Place(DeviceKind::kCpu, {0}, {0, 1, 2});
    const Plan plan = MustCompile(job.job()).plan;
    // Reduce-scattered over machines 1 and 2 (those with parts but the
    // first reader's); each machine concatenates the two sums itself, so
    // no whole crosses.
    const std::set<std::string> crossings = Crossings(plan, 3);
    INFO(absl::StrJoin(crossings, "; "));
    for (const char* concat : {"src.out:concat@cpu0", "src.out:concat@m1.cpu0",
                               "src.out:concat@m2.cpu0"}) {
      CHECK(Task(plan, concat).kernel().op_type() == "concat");
      for (int m = 0; m < 3; ++m) {
        CHECK(crossings.count(absl::StrCat(concat, " -> ", m)) == 0);
      }
    }
    CHECK(crossings.count("src.out:add0of2@m1.cpu0 -> 2") == 1);
    CHECK(crossings.count("src.out:add1of2@m2.cpu0 -> 1") == 1);
    // Every concat reads the sums in reducer order: the same bits.
    const int64_t first = Out(plan, "src.out:add0of2@m1.cpu0").regst_desc_id();
    const int64_t second = Out(plan, "src.out:add1of2@m2.cpu0").regst_desc_id();
    for (const char* concat : {"src.out:concat@cpu0", "src.out:concat@m1.cpu0",
                               "src.out:concat@m2.cpu0"}) {
      const auto& in = Task(plan, concat).consumed_regst_desc_id().at("in");
      REQUIRE(in.regst_desc_id_size() == 2);
      CHECK(in.regst_desc_id(0) == first);
      CHECK(in.regst_desc_id(1) == second);
    }
  }
  SECTION("a whole on one machine split over two: cut where it is made") {
    JobBuilder job(2);
    job.Op("src", "source").Blob(F64({6}));
    job.Op("use", "checksum")
        .Input("src")
        .InputSplit(0)
        .Place(DeviceKind::kCpu, {0}, {0, 1});
    const Plan plan = MustCompile(job.job()).plan;
    CHECK(Task(plan, "src:slice(0)1of2@cpu0").stream().machine_id() == 0);
    CHECK(Crossings(plan, 2) ==
          std::set<std::string>{"src:slice(0)1of2@cpu0 -> 1"});
  }
  SECTION("a whole made on a third machine: cut there, each slice sent") {
    JobBuilder job(2);
    job.Op("src", "source").Blob(F64({6})).Place(DeviceKind::kCpu, {0}, {2});
    job.Op("use", "checksum")
        .Input("src")
        .InputSplit(0)
        .Place(DeviceKind::kCpu, {0}, {0, 1});
    const Plan plan = MustCompile(job.job()).plan;
    CHECK(Crossings(plan, 3) ==
          std::set<std::string>{"src:slice(0)0of2@m2.cpu0 -> 0",
                                "src:slice(0)1of2@m2.cpu0 -> 1"});
  }
}

// Runs where two GPUs are usable: a real machine, or the emulated device
// (--config=emulated_gpu, which CI runs every test under).
TEST_CASE("a job over two GPUs runs: copies in, split over devices, back") {
  if (!HasGpuKernels()) {
    WARN("this build has no GPU kernels");
    return;
  }
  if (!cuda::DeviceAvailable(0).ok() || !cuda::DeviceAvailable(1).ok()) {
    WARN("no two usable GPUs here: compiled, not run");
  }
  JobBuilder job(6);
  job.Op("src", "source").Blob(F64({8, 3}));
  job.Op("scaled", "scale")
      .Input("src")
      .Attr("factor", 2.0)
      .Place(DeviceKind::kGpu, {0, 1});
  job.Op("summed", "add")
      .Input("scaled")
      .Input("scaled")
      .Place(DeviceKind::kGpu, {0, 1});
  job.Op("sink", "checksum").Input("summed");
  const CompiledJob compiled = MustCompile(job.job());
  // Slices on the host, each copied to its GPU; the parts come back
  // through d2h to a concat; add(x, x) reads a copy the second time.
  CHECK(compiled.report.copies == 4);
  CHECK(Names(compiled.plan).count("src:slice(0)1of2@cpu0@gpu1") == 1);
  CHECK(Names(compiled.plan).count("summed/1@cpu") == 1);
  if (!cuda::DeviceAvailable(0).ok() || !cuda::DeviceAvailable(1).ok()) return;
  // 24 elements of value p, times 2, twice, over pieces 0..5.
  CHECK(RunPlan(compiled.plan, {}).at("sink").checksum == 24 * 4 * 15.0);
}

TEST_CASE("an op reads one output any number of times, through copies") {
  // The job of docs/jobs.md's example: 0 + 0 + 0 and 1 + 1 + 1 over 4
  // elements.
  Job job;
  REQUIRE(google::protobuf::TextFormat::ParseFromString(R"(
    total_piece_num: 2
    op { name: "x" op_type: "source" shape: [4] }
    op { name: "sum3" op_type: "add" input: ["x", "x", "x"] }
    op { name: "sink" op_type: "checksum" input: "sum3" }
  )",
                                                        &job));
  CompiledJob compiled = MustCompile(job);
  CHECK(Names(compiled.plan) == std::set<std::string>{"x", "sum3", "sink",
                                                      "x:again@sum3",
                                                      "x:again@sum3#2"});
  auto sinks = RunPlan(compiled.plan, {});
  CHECK(sinks.at("sink").pieces == 2);
  CHECK(sinks.at("sink").checksum == 12);

  // Five reads, on two devices: four copies per device.
  job.mutable_op(1)->add_input("x");
  job.mutable_op(1)->add_input("x");
  job.mutable_op(1)->mutable_placement()->add_device_id(0);
  job.mutable_op(1)->mutable_placement()->add_device_id(1);
  compiled = MustCompile(job);
  int copies = 0;
  for (const TaskProto& task : compiled.plan.task()) {
    copies += absl::StrContains(task.name(), ":again@");
  }
  CHECK(copies == 8);
  CHECK(Names(compiled.plan).count("x:slice(0)1of2@cpu1:again@sum3/1#4") == 1);
  sinks = RunPlan(compiled.plan, {});
  CHECK(sinks.at("sink").checksum == 20);
}

TEST_CASE("partial sums are read as partial sums by as many devices") {
  KernelBindings kernels = TestKernels();
  double expected = 0;
  for (int p = 0; p < 2; ++p) {
    for (int i = 0; i < 15; ++i) expected += (i + 1) * (100.0 * p + i);
  }
  auto job_to = [](std::vector<int32_t> devices) {
    JobBuilder job(2);
    job.Op("ramp", "test_ramp").Blob(F64({5, 3}));
    job.Op("made", "test_partial")
        .Input("ramp")
        .InputBroadcast()
        .Place(DeviceKind::kCpu, {0, 1})
        .OutputSignature("out", PartialSumSignature());
    job.Op("read", "scale")
        .Attr("factor", 2.0)
        .Input("made")
        .InputPartialSum()
        .Place(DeviceKind::kCpu, devices);
    job.Op("sink", "test_weighted").Input("read");
    return job;
  };
  // Other devices, as many: device j takes part j, nothing is added in
  // between; the sink adds the two parts.
  JobBuilder moved = job_to({2, 3});
  const CompiledJob compiled = MustCompile(moved.job(), &kernels);
  const Plan& plan = compiled.plan;
  CHECK(
      Task(plan, "read/0").consumed_regst_desc_id().at("in").regst_desc_id(0) ==
      Out(plan, "made/0").regst_desc_id());
  CHECK(
      Task(plan, "read/1").consumed_regst_desc_id().at("in").regst_desc_id(0) ==
      Out(plan, "made/1").regst_desc_id());
  CHECK(std::count(compiled.report.signatures.begin(),
                   compiled.report.signatures.end(),
                   "op 'read' on 2 devices: in=partial_sum -> "
                   "out=partial_sum") == 1);
  CHECK(RunPlan(plan, kernels).at("sink").checksum == 2 * expected);
  // Another count: refused, naming the input.
  JobBuilder three = job_to({1, 2, 3});
  CHECK(CompileError(three.job(), &kernels) ==
        "op 'read' input 0 ('made'): reads partial_sum, but its producer's "
        "partial_sum over 2 devices cannot become partial sums over 3 (only "
        "partial sums over as many devices are read as partial sums, part j "
        "by device j)");
}

TEST_CASE("head, slice and concat read a split along their axis whole") {
  KernelBindings kernels = TestKernels();
  // ramp [6, 2] split by rows over two devices; each op on the same two.
  auto job_with = [](const std::string& op_type, bool state_split) {
    JobBuilder job(3);
    job.Op("ramp", "test_ramp").Blob(F64({6, 2}));
    job.Op("rows", "identity")
        .Input("ramp")
        .InputSplit(0)
        .Place(DeviceKind::kCpu, {0, 1});
    auto op = job.Op("op", op_type).Place(DeviceKind::kCpu, {0, 1});
    op.Input("rows");
    if (state_split) op.InputSplit(0);
    if (op_type == "concat") {
      op.Input("rows").Attr("axis", 0);
      if (state_split) op.InputSplit(0);
    }
    if (op_type == "head") op.Attr("mod", 2);
    if (op_type == "slice")
      op.Attr("axis", 0).Attr("parts", 2).Attr("index", 1);
    job.Op("sink", "test_weighted").Input("op");
    return job;
  };
  // The whole, as one device makes it.
  auto one_device = [&](const std::string& op_type) {
    JobBuilder job = job_with(op_type, false);
    for (OpConf& op : *job.job().mutable_op()) op.clear_placement();
    return RunPlan(MustCompile(job.job(), &kernels).plan, kernels)
        .at("sink")
        .checksum;
  };
  for (const std::string op_type : {"head", "slice", "concat"}) {
    INFO(op_type);
    JobBuilder inferred = job_with(op_type, false);
    const CompiledJob compiled = MustCompile(inferred.job(), &kernels);
    const std::string in =
        op_type == "concat" ? "in=broadcast in=broadcast" : "in=broadcast";
    CHECK(std::count(compiled.report.signatures.begin(),
                     compiled.report.signatures.end(),
                     "op 'op' on 2 devices: " + in + " -> out=broadcast") == 1);
    const double whole = one_device(op_type);
    CHECK(RunPlan(compiled.plan, kernels).at("sink").checksum == whole);
    // Stated, the split wins and the rule is dropped: each device works on
    // its part, and the parts are joined as made (another result).
    JobBuilder stated = job_with(op_type, true);
    const CompiledJob parts = MustCompile(stated.job(), &kernels);
    const std::string split_in =
        op_type == "concat" ? "in=split(0) in=split(0)" : "in=split(0)";
    CHECK(std::count(
              parts.report.signatures.begin(), parts.report.signatures.end(),
              "op 'op' on 2 devices: " + split_in + " -> out=split(0)") == 1);
    CHECK(RunPlan(parts.plan, kernels).at("sink").checksum != whole);
  }
}

// Every signature a producer can have, over 1-3 devices, read with every
// signature a consumer can ask for, over 1-4 devices, then gathered: the
// weighted sum must be the ramp's.
TEST_CASE("boxing between every pair of signatures and device counts") {
  KernelBindings kernels = TestKernels();
  const std::vector<std::string> producers = {"split0", "split1", "broadcast",
                                              "partial_sum"};
  const std::vector<std::string> consumers = {"split0", "split1", "broadcast"};
  const std::vector<std::vector<int32_t>> from_devices = {
      {0}, {0, 1}, {1, 2, 3}};
  const std::vector<std::vector<int32_t>> to_devices = {
      {2}, {0, 1}, {0, 1, 2, 3}};
  constexpr int kPieces = 2;
  double expected = 0;
  for (int p = 0; p < kPieces; ++p) {
    for (int i = 0; i < 15; ++i) expected += (i + 1) * (100.0 * p + i);
  }
  int cases = 0;
  for (const std::string& from : producers) {
    for (const std::string& to : consumers) {
      for (const auto& from_dev : from_devices) {
        for (const auto& to_dev : to_devices) {
          JobBuilder job(kPieces);
          job.Op("ramp", "test_ramp").Blob(F64({5, 3}));
          auto made = job.Op(
              "made", from == "partial_sum" ? "test_partial" : "identity");
          made.Input("ramp").Place(DeviceKind::kCpu, from_dev);
          if (from == "split0") made.InputSplit(0);
          if (from == "split1") made.InputSplit(1);
          if (from == "broadcast" || from == "partial_sum")
            made.InputBroadcast();
          if (from == "partial_sum") {
            made.OutputSignature("out", PartialSumSignature());
          }
          auto read = job.Op("read", "identity")
                          .Input("made")
                          .Place(DeviceKind::kCpu, to_dev);
          if (to == "split0") read.InputSplit(0);
          if (to == "split1") read.InputSplit(1);
          if (to == "broadcast") read.InputBroadcast();
          auto sink = job.Op("sink", "test_weighted").Input("read");
          // A broadcast read on n devices: gather one of them.
          if (to == "broadcast") sink.InputBroadcast();
          INFO(from << " over " << from_dev.size() << " -> " << to << " over "
                    << to_dev.size());
          const Plan plan = MustCompile(job.job(), &kernels).plan;
          CHECK(RunPlan(plan, kernels).at("sink").checksum == expected);
          ++cases;
        }
      }
    }
  }
  CHECK(cases == 108);
}

TEST_CASE("a data source over devices reads its rows of each batch, once") {
  auto job_on = [](std::vector<int32_t> devices) {
    const std::string dir = "/usr/share/datasets/fashion-mnist/";
    JobBuilder job(4);
    job.Op("data", "idx_batches")
        .Attr("images", dir + "t10k-images-idx3-ubyte.gz")
        .Attr("labels", dir + "t10k-labels-idx1-ubyte.gz")
        .Attr("batch", 11)
        .Attr("limit", 40)  // batches of 11, 11, 11, 7
        .Attr("shuffle_window", 40)
        .Attr("seed", 3)
        .Output("y")
        .Place(DeviceKind::kCpu, devices);
    job.Op("sink", "checksum").Input("data.x");
    return MustCompile(job.job());
  };
  const CompiledJob one = job_on({0});
  const CompiledJob three = job_on({0, 1, 2});
  for (int j = 0; j < 3; ++j) {
    const auto& attrs =
        Task(three.plan, absl::StrCat("data/", j)).kernel().attr();
    CHECK(attrs.at("parallel_index").i() == j);
    CHECK(attrs.at("parallel_num").i() == 3);
  }
  CHECK(Task(one.plan, "data").kernel().attr().count("parallel_index") == 0);
  // Rows 4, 4, 3 of each batch of 11 (3, 2, 2 of the last): gathered, the
  // same pixels in the same order.
  CHECK(Out(three.plan, "data/2", "x").blob(0).shape(0) == 3);
  const auto a = RunPlan(one.plan, {}).at("sink");
  const auto b = RunPlan(three.plan, {}).at("sink");
  CHECK(a.pieces == 4);
  CHECK(b.pieces == 4);
  CHECK(a.checksum == b.checksum);
}

// The training example: softmax regression on Fashion-MNIST with its batch
// split over two devices, gradients as partial sums added by the compiler.
TEST_CASE("a data-parallel training job learns as its one-device twin") {
  absl::StatusOr<Job> two = LoadJob("examples/jobs/mnist_two_devices.pbtxt");
  INFO(two.status().message());
  REQUIRE(two.ok());
  two->set_total_piece_num(60);
  Job one = *two;
  for (OpConf& op : *one.mutable_op())
    op.mutable_placement()->clear_device_id();
  const CompiledJob parallel = MustCompile(*two);
  CHECK(parallel.report.boxing >= 4);  // at least the four partial-sum adds
  CHECK(Names(parallel.plan).count("dw.out:add@cpu0") == 1);
  const auto split = RunPlan(parallel.plan, {});
  const auto alone = RunPlan(MustCompile(one).plan, {});
  const double loss = alone.at("loss").checksum;
  CHECK(loss > 0);
  CHECK(std::abs(split.at("loss").checksum - loss) < 1e-6 * loss);
  // The predictions before each step: equal unless a sum's last bit tips
  // one of the 6,000 samples over.
  CHECK(std::abs(split.at("correct").checksum - alone.at("correct").checksum) <=
        2);
  // Better than chance (10 %) after a few dozen steps.
  CHECK(alone.at("correct").checksum > 0.5 * 6000);
}

TEST_CASE("a tensor-parallel matmul's signatures are inferred") {
  // a [4, 6] split by columns times b [6, 3] split by rows: partial sums;
  // a^T (split by rows) times c [4, 3] whole: rows of [6, 3].
  auto job_on = [](std::vector<int32_t> devices) {
    JobBuilder job(3);
    job.Op("a", "source")
        .Shape({4, 6})
        .Place(DeviceKind::kCpu, devices)
        .OutputSignature("out", SplitSignature(1));
    job.Op("b", "source")
        .Shape({6, 3})
        .Attr("value", 2.0)
        .Place(DeviceKind::kCpu, devices)
        .OutputSignature("out", SplitSignature(0));
    job.Op("c", "source")
        .Shape({4, 3})
        .Attr("value", 3.0)
        .Place(DeviceKind::kCpu, devices)
        .OutputSignature("out", BroadcastSignature());
    job.Op("m", "matmul")
        .Input("a=a")
        .Input("b=b")
        .Place(DeviceKind::kCpu, devices);
    job.Op("g", "matmul")
        .Attr("transpose_a", true)
        .Input("a=a")
        .Input("b=c")
        .Place(DeviceKind::kCpu, devices);
    job.Op("ms", "checksum").Input("m");
    job.Op("gs", "checksum").Input("g");
    return MustCompile(job.job());
  };
  const CompiledJob two = job_on({0, 1});
  const std::vector<std::string>& lines = two.report.signatures;
  CHECK(std::count(lines.begin(), lines.end(),
                   "op 'm' on 2 devices: a=split(1) b=split(0) -> "
                   "out=partial_sum") == 1);
  CHECK(std::count(lines.begin(), lines.end(),
                   "op 'g' on 2 devices: a=split(1) b=broadcast -> "
                   "out=split(0)") == 1);
  const auto split = RunPlan(two.plan, {});
  const auto one = RunPlan(job_on({0}).plan, {});
  CHECK(split.at("ms").checksum == one.at("ms").checksum);
  CHECK(split.at("gs").checksum == one.at("gs").checksum);
  CHECK(one.at("ms").checksum != 0);
}

TEST_CASE("signatures the job leaves out come from each op_type's rule") {
  // The MNIST job states every signature; without them the rules of
  // matmul, bias_add, bias_add_grad, softmax_xent, accuracy and
  // sgd_momentum give the same plan.
  absl::StatusOr<Job> stated = LoadJob("examples/jobs/mnist_two_devices.pbtxt");
  REQUIRE(stated.ok());
  Job inferred = *stated;
  int cleared = 0;
  for (OpConf& op : *inferred.mutable_op()) {
    cleared += op.input_signature_size() + op.output_signature_size();
    op.clear_input_signature();
    op.clear_output_signature();
  }
  CHECK(cleared == 12);
  // Text format prints map entries sorted; the wire format need not.
  std::string inferred_text, stated_text;
  google::protobuf::TextFormat::PrintToString(MustCompile(inferred).plan,
                                              &inferred_text);
  google::protobuf::TextFormat::PrintToString(MustCompile(*stated).plan,
                                              &stated_text);
  CHECK(inferred_text == stated_text);

  // The perceptron's job writes none: its batch is split by rows, its
  // gradients summed, its labels split for the loss and whole for the
  // optimizers.
  absl::StatusOr<Job> mlp = LoadJob("examples/jobs/mlp_two_devices.pbtxt");
  REQUIRE(mlp.ok());
  mlp->set_total_piece_num(60);
  const CompiledJob parallel = MustCompile(*mlp);
  std::vector<std::string> adds;
  for (const std::string& line : parallel.report.inserted) {
    if (absl::StartsWith(line, "add ")) adds.push_back(line);
  }
  CHECK(adds == std::vector<std::string>{
                    "add 'dw0.out:add@cpu0' for op 'sgd_w0' input 0 "
                    "('grad=dw0')",
                    "add 'db0.out:add@cpu0' for op 'sgd_b0' input 0 "
                    "('grad=db0')",
                    "add 'dw1.out:add@cpu0' for op 'sgd_w1' input 0 "
                    "('grad=dw1')",
                    "add 'db1.out:add@cpu0' for op 'sgd_b1' input 0 "
                    "('grad=db1')",
                    "add 'xent.loss:add@cpu0' for op 'loss' input 0 "
                    "('xent.loss')",
                    "add 'accuracy.out:add@cpu0' for op 'correct' input 0 "
                    "('accuracy')"});
  // What each op got, stated or inferred, one line per op.
  const auto& lines = parallel.report.signatures;
  CHECK(std::count(lines.begin(), lines.end(),
                   "op 'dw0' on 2 devices: a=split(0) b=split(0) -> "
                   "out=partial_sum") == 1);
  CHECK(std::count(lines.begin(), lines.end(),
                   "op 'sgd_w0' on 2 devices: grad=broadcast batch=broadcast "
                   "-> delta=broadcast") == 1);
  CHECK(std::count(lines.begin(), lines.end(),
                   "op 'xent' on 2 devices: logits=split(0) labels=split(0) "
                   "-> dlogits=split(0) loss=partial_sum") == 1);
  CHECK(lines.size() == 21);  // every op but data, loss and correct
  // The two halves of the batch: x for h0, labels for xent.
  CHECK(Names(parallel.plan).count("data:slice(0)1of2@cpu1") == 1);
  CHECK(Names(parallel.plan).count("data:slice(0)1of2@cpu1#2") == 1);
  // Two devices, one stream each.
  CHECK(parallel.report.streams == 2);

  Job one = *mlp;
  for (OpConf& op : *one.mutable_op()) op.clear_placement();
  const auto split = RunPlan(parallel.plan, {});
  const auto alone = RunPlan(MustCompile(one).plan, {});
  const double loss = alone.at("loss").checksum;
  CHECK(std::abs(split.at("loss").checksum - loss) < 1e-6 * loss);
  CHECK(std::abs(split.at("correct").checksum - alone.at("correct").checksum) <=
        2);
  CHECK(alone.at("correct").checksum > 0.5 * 6000);

  // A stated signature wins over the rule: the weights' gradient taken
  // whole on each device is no partial sum, so nothing is added.
  for (OpConf& op : *mlp->mutable_op()) {
    if (op.name() == "dw1") {
      (*op.mutable_output_signature())["out"].set_broadcast(true);
    }
  }
  bool added = false;
  for (const std::string& line : MustCompile(*mlp).report.inserted) {
    added |= absl::StrContains(line, "dw1.out:add");
  }
  CHECK_FALSE(added);
}

TEST_CASE("register_num follows the stages and fits the memory budget") {
  JobBuilder job(2);
  job.Op("src", "source").Shape({1024});
  job.Op("late", "identity").Input("src").Stage(3);
  job.Op("sink", "checksum").Input("late").Stage(3);
  CompiledJob compiled = MustCompile(job.job());
  // Read 3 stages later: 4 buffers.
  CHECK(Task(compiled.plan, "src")
            .produced_regst_desc()
            .at("out")
            .register_num() == 4);
  CHECK(Task(compiled.plan, "late")
            .produced_regst_desc()
            .at("out")
            .register_num() == 2);
  // Different stages never share a stream.
  CHECK(Task(compiled.plan, "late").stream().stream_index() !=
        Task(compiled.plan, "src").stream().stream_index());
  CHECK(compiled.report.register_bytes == 4096 * (4 + 2));

  job.job().set_memory_budget_bytes(4096 * 4);
  compiled = MustCompile(job.job());
  CHECK(Task(compiled.plan, "src")
            .produced_regst_desc()
            .at("out")
            .register_num() == 2);
  CHECK(Task(compiled.plan, "late")
            .produced_regst_desc()
            .at("out")
            .register_num() == 2);

  job.job().set_memory_budget_bytes(4096 * 2);
  compiled = MustCompile(job.job());
  CHECK(Task(compiled.plan, "src")
            .produced_regst_desc()
            .at("out")
            .register_num() == 1);
  CHECK(Task(compiled.plan, "late")
            .produced_regst_desc()
            .at("out")
            .register_num() == 1);

  job.job().set_memory_budget_bytes(4096);
  CHECK(CompileError(job.job()) ==
        "job: the registers need 8192 bytes at one buffer each; "
        "memory_budget_bytes is 4096");

  // A stated register_num is what the register gets: deeper or shallower
  // than the stages ask, and kept when the budget takes buffers from the
  // others.
  job.job().set_memory_budget_bytes(0);
  job.job().mutable_op(0)->mutable_register_num()->insert({"out", 1});
  job.job().mutable_op(1)->mutable_register_num()->insert({"out", 5});
  compiled = MustCompile(job.job());
  CHECK(Out(compiled.plan, "src").register_num() == 1);
  CHECK(Out(compiled.plan, "late").register_num() == 5);
  job.job().mutable_op(0)->clear_register_num();
  compiled = MustCompile(job.job());
  CHECK(Out(compiled.plan, "src").register_num() == 4);
  job.job().set_memory_budget_bytes(4096 * 6);
  compiled = MustCompile(job.job());
  CHECK(Out(compiled.plan, "src").register_num() == 1);
  CHECK(Out(compiled.plan, "late").register_num() == 5);
  job.job().set_memory_budget_bytes(4096 * 5);
  CHECK(CompileError(job.job()) ==
        "job: the registers need 24576 bytes at one buffer each; "
        "memory_budget_bytes is 20480");
}

TEST_CASE(
    "memory sharing: one buffer inside a training window, and blocks "
    "whose members never hold data at once") {
  absl::StatusOr<Job> mlp = LoadJob("examples/jobs/mlp_two_devices.pbtxt");
  REQUIRE(mlp.ok());
  mlp->set_total_piece_num(60);
  const CompiledJob shared = MustCompile(*mlp);
  JobCompileOptions off;
  off.probe = [](int) { return absl::OkStatus(); };
  off.share_memory = false;
  absl::StatusOr<CompiledJob> unshared = CompileJob(*mlp, off);
  REQUIRE(unshared.ok());
  const Plan& plan = shared.plan;

  // Inside w0's window (h0 -> z0 -> relu ... -> sgd_w0 -> w0) every
  // register has one buffer; a0's output is also read by dw1, outside that
  // window (it ends at w1), and keeps two: a0 may run piece p + 1 before
  // dw1 has read piece p.
  CHECK(Out(plan, "h0/0").register_num() == 1);
  CHECK(Out(plan, "z0/0").register_num() == 1);
  CHECK(Out(plan, "sgd_w0/0", "delta").register_num() == 1);
  CHECK(Out(plan, "a0/0").register_num() == 2);
  CHECK(Out(unshared->plan, "h0/0").register_num() == 2);
  // The data source is in no window.
  CHECK(Out(plan, "data", "x").register_num() == 2);
  CHECK(Out(plan, "data", "x").mem_block_id() == 0);

  // h0 and h1 share: h0's reader z0 leads to a0, which makes h1's input.
  // h0 and z0 cannot: z0 reads the one as it writes the other.
  CHECK(Out(plan, "h0/0").mem_block_id() != 0);
  CHECK(Out(plan, "h0/0").mem_block_id() == Out(plan, "h1/0").mem_block_id());
  CHECK(Out(plan, "h0/0").mem_block_id() != Out(plan, "z0/0").mem_block_id());
  // The two devices' tasks never share: nothing orders them.
  CHECK(Out(plan, "h0/0").mem_block_id() != Out(plan, "h0/1").mem_block_id());
  for (const TaskProto& task : unshared->plan.task()) {
    for (const auto& [key, desc] : task.produced_regst_desc()) {
      CHECK(desc.mem_block_id() == 0);
    }
  }

  // The report: blocks, their registers, and bytes that match the two
  // plans' register bytes.
  const JobCompileReport& r = shared.report;
  CHECK(r.shared_blocks == 8);
  CHECK(r.shared_registers == 24);
  CHECK(r.bytes_saved > 0);
  CHECK(r.single_buffer_registers > 0);
  CHECK(r.register_bytes < unshared->report.register_bytes);
  CHECK(unshared->report.shared_blocks == 0);
  CHECK(unshared->report.bytes_saved == 0);

  // Run with the session's check: each block is claimed by one register at
  // a time and a register's bytes are poisoned (NaN) as soon as its last
  // reader is done, so any overlap fails the run or changes the sums. The
  // results equal those of the plan without sharing, bit for bit.
  SessionOptions checked;
  checked.check_memory_sharing = true;
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(plan, std::move(checked));
  INFO(session.status().message());
  REQUIRE(session.ok());
  absl::StatusOr<RunStats> run = (*session)->Run(-1);
  INFO(run.status().message());
  REQUIRE(run.ok());
  const auto with = (*session)->Sinks();
  const auto without = RunPlan(unshared->plan, {});
  CHECK(with.at("loss").checksum == without.at("loss").checksum);
  CHECK(with.at("correct").checksum == without.at("correct").checksum);
  CHECK(with.at("correct").checksum > 0.5 * 6000);
  // A second run of the same session reuses the blocks from a clean start.
  REQUIRE((*session)->Run(-1).ok());
}

TEST_CASE(
    "a shared block the plan's shape does not allow is refused, "
    "word for word; the session's check catches what gets through") {
  absl::StatusOr<Job> mlp = LoadJob("examples/jobs/mlp_two_devices.pbtxt");
  REQUIRE(mlp.ok());
  mlp->set_total_piece_num(20);
  const Plan good = MustCompile(*mlp).plan;
  auto edit = [&](const std::string& task, const std::string& output,
                  auto change) {
    Plan plan = good;
    for (TaskProto& t : *plan.mutable_task()) {
      if (t.name() == task) change(&(*t.mutable_produced_regst_desc())[output]);
    }
    return plan;
  };
  auto errors = [](const Plan& plan) {
    CompileOptions options;
    absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
        CompilePlan(plan, options);
    REQUIRE_FALSE(compiled.ok());
    return std::string(compiled.status().message());
  };
  const int64_t h0_block = Out(good, "h0/0").mem_block_id();
  // z0 reads h0's register while it writes its own.
  CHECK(errors(edit(
            "z0/0", "out",
            [&](RegisterDescProto* d) { d->set_mem_block_id(h0_block); })) ==
        "task 'z0/0' (task_id 12): regst_desc 1201.mem_block_id " +
            std::to_string(h0_block) +
            ": regst_desc 1001 and regst_desc 1201 may hold data at "
            "once: no path of registers orders every reader of one "
            "before the other's producer (task 'h0/0' (task_id 10), "
            "task 'z0/0' (task_id 12))");
  CHECK(errors(edit(
            "a0/0", "out",
            [&](RegisterDescProto* d) { d->set_mem_block_id(h0_block); })) ==
        "task 'a0/0' (task_id 14): produced_regst_desc['out'] "
        "(regst_desc 1401).mem_block_id " +
            std::to_string(h0_block) +
            ": register_num is 2; only registers of one buffer share "
            "memory");
  CHECK(errors(edit("a0/0", "out",
                    [&](RegisterDescProto* d) {
                      d->set_register_num(1);
                      d->set_mem_block_id(h0_block);
                    })) ==
        "task 'a0/0' (task_id 14): regst_desc 1401.mem_block_id " +
            std::to_string(h0_block) +
            ": cannot share memory: its producer and readers are not "
            "all inside one training window (the tasks that a "
            "variable's initial register reaches and that reach the "
            "variable again)");
  CHECK(errors(edit("h0/0", "out",
                    [&](RegisterDescProto* d) { d->set_mem_block_id(-1); })) ==
        "task 'h0/0' (task_id 10): produced_regst_desc['out'] "
        "(regst_desc 1001).mem_block_id -1: must be >= 0");

  // The check itself, on a block used as the plan does not allow: a
  // register claimed while another holds data, a read of data no longer
  // held, and the poison at the last read.
  SharedBlock block(7);
  CHECK(block.Claim(1001, 1) == "");
  CHECK(block.Claim(1201, 1) ==
        "shared memory block 7: regst_desc 1201 was written while regst_desc "
        "1001 held data in it");
  float data[4] = {1, 2, 3, 4};
  CHECK(block.ReaderDone(1201, data, sizeof(data)) ==
        "shared memory block 7: regst_desc 1201 was read while regst_desc "
        "1001 held data in it");
  CHECK(data[0] == 1);
  CHECK(block.ReaderDone(1001, data, sizeof(data)) == "");
  for (float x : data) CHECK(std::isnan(x));
  CHECK(block.ReaderDone(1001, data, sizeof(data)) ==
        "shared memory block 7: regst_desc 1001 was read while no register "
        "held data in it");
  CHECK(block.Claim(1201, 0) == "");
  block.ReleaseIfHeld(1001, nullptr, 0);  // not the holder: no effect
  CHECK(block.Claim(1001, 1) != "");
  block.ReleaseIfHeld(1201, nullptr, 0);
  CHECK(block.Claim(1001, 1) == "");
}

TEST_CASE("errors name the operator and the input, word for word") {
  SECTION("an input naming no op, a name taken twice") {
    JobBuilder job(1);
    job.Op("src", "source").Shape({4});
    job.Op("src", "source").Shape({4});
    job.Op("sink", "checksum").Input("scr.out");
    CHECK(CompileError(job.job()) ==
          "op 'src': the name is taken by op 0\n"
          "op 'sink' input 0 ('scr.out'): no op named 'scr'");
  }
  SECTION("a cycle without an initial op") {
    JobBuilder job(1);
    job.Op("a", "identity").Input("b");
    job.Op("b", "identity").Input("a");
    CHECK(CompileError(job.job()) ==
          "job: ops 'a', 'b' wait on each other in a cycle; a cycle needs an "
          "op with `initial: true` on it (its outputs are there before it "
          "acts)");
  }
  SECTION("the cycle's ops, not those behind it, one error per cycle") {
    JobBuilder job(1);
    job.Op("src", "source").Shape({4});
    job.Op("after", "identity").Input("pong");
    job.Op("ping", "add").Input("src").Input("pong");
    job.Op("pong", "identity").Input("ping");
    job.Op("self", "add").Input("src").Input("self");
    job.Op("last", "add").Input("after").Input("self");
    CHECK(CompileError(job.job()) ==
          "job: ops 'ping', 'pong' wait on each other in a cycle; a cycle "
          "needs an op with `initial: true` on it (its outputs are there "
          "before it acts)\n"
          "job: op 'self' reads its own output; a cycle needs an op with "
          "`initial: true` on it (its outputs are there before it acts)");
    // In edge direction, from the first op of the job on it.
    JobBuilder ring(1);
    ring.Op("c", "identity").Input("b");
    ring.Op("a", "identity").Input("c");
    ring.Op("b", "identity").Input("a");
    CHECK(CompileError(ring.job()) ==
          "job: ops 'c', 'a', 'b' wait on each other in a cycle; a cycle "
          "needs an op with `initial: true` on it (its outputs are there "
          "before it acts)");
  }
  SECTION("a split along an axis the blob lacks") {
    JobBuilder job(1);
    job.Op("src", "source").Shape({4});
    job.Op("sink", "checksum")
        .Input("src")
        .Place(DeviceKind::kCpu, {0, 1})
        .InputSplit(1);
    CHECK(CompileError(job.job()) ==
          "op 'sink' input 0 ('src'): split(1) but blob 'data' is "
          "data: float32 [4]");
  }
  SECTION("partial sums asked of a producer that has none") {
    JobBuilder job(1);
    job.Op("src", "source").Shape({4});
    job.Op("sink", "checksum")
        .Input("src")
        .Place(DeviceKind::kCpu, {0, 1})
        .InputPartialSum();
    CHECK(CompileError(job.job()) ==
          "op 'sink' input 0 ('src'): reads partial_sum, but its producer's "
          "broadcast over 1 devices cannot become partial sums over 2 (only "
          "partial sums over as many devices are read as partial sums, part "
          "j by device j)");
  }
  SECTION("signatures for some inputs, placements listed twice, stages") {
    JobBuilder job(1);
    job.Op("src", "source").Shape({4});
    auto add = job.Op("add", "add").Input("src").Input("src").Stage(-1);
    add.conf()->add_input_signature();
    add.Place(DeviceKind::kCpu, {1, 1});
    CHECK(CompileError(job.job()) ==
          "op 'add': stage must be >= 0\n"
          "op 'add': placement.device_id 1 is listed twice\n"
          "op 'add': 1 input_signature for 2 inputs (give one per input, or "
          "none)");
  }
  SECTION("a kernel refusing its attributes names the op") {
    JobBuilder job(1);
    job.Op("src", "source").Shape({4});
    job.Op("double", "scale").Input("src").Attr("factor", "two");
    job.Op("sink", "checksum").Input("double");
    const std::string error = CompileError(job.job());
    INFO(error);
    CHECK(absl::StartsWith(error, "op 'double': "));
    CHECK(absl::StrContains(error, "factor"));
  }
  SECTION("an output the kernel needs and nobody reads") {
    JobBuilder job(1);
    job.Op("src", "source").Shape({4});
    job.Op("double", "scale").Input("src").Attr("factor", 2.0);
    CHECK(CompileError(job.job()) ==
          "op 'double': produced_regst_desc['out']: missing; scale produces "
          "\"out\" (list it under the op's `output`, or give it a consumer)");
    job.job().mutable_op(1)->add_output("out");
    MustCompile(job.job());
  }
  SECTION("register_num for no output, below 1, or deep on an initial op") {
    JobBuilder job(1);
    job.Op("src", "source").Shape({4}).RegisterNum("outt", 2);
    job.Op("var", "variable")
        .Shape({4})
        .Initial()
        .Input("delta=step")
        .RegisterNum("out", 2);
    job.Op("step", "identity").Input("var").RegisterNum("out", 0);
    job.Op("sink", "checksum").Input("src");
    CHECK(CompileError(job.job()) ==
          "op 'src': register_num['outt'] names no output of it\n"
          "op 'var': register_num['out'] is 2; an initial op's registers "
          "hold one buffer\n"
          "op 'step': register_num['out'] is 0; give 1 or more");
  }
  SECTION("an unknown op_type names the op") {
    JobBuilder job(1);
    job.Op("src", "no_such_kernel").Shape({4});
    const std::string error = CompileError(job.job());
    INFO(error);
    CHECK(absl::StartsWith(error, "op 'src': "));
    CHECK(absl::StrContains(error, "no_such_kernel"));
  }
}

TEST_CASE("a plan whose cycle no source reaches is refused, not run forever") {
  Plan plan;
  plan.set_total_piece_num(3);
  auto* w = plan.add_task();
  w->set_task_id(1);
  w->set_name("w");
  w->mutable_kernel()->set_op_type("identity");
  auto& out = (*w->mutable_produced_regst_desc())["out"];
  out.set_regst_desc_id(10);
  out.set_producer_task_id(1);
  out.add_consumer_task_id(2);
  out.set_register_num(1);
  out.set_initial_register(true);
  *out.add_blob() = BlobProto("x", DT_FLOAT32, {4});
  (*w->mutable_consumed_regst_desc_id())["in"].add_regst_desc_id(20);
  auto* u = plan.add_task();
  u->set_task_id(2);
  u->set_name("update");
  u->mutable_kernel()->set_op_type("identity");
  auto& uout = (*u->mutable_produced_regst_desc())["out"];
  uout.set_regst_desc_id(20);
  uout.set_producer_task_id(2);
  uout.add_consumer_task_id(1);
  uout.set_register_num(1);
  (*u->mutable_consumed_regst_desc_id())["in"].add_regst_desc_id(10);
  const std::vector<std::string> problems = ValidatePlan(plan);
  CHECK(std::find(problems.begin(), problems.end(),
                  "plan: no source reaches tasks 'w', 'update': they are on or "
                  "behind a cycle through an initial register with no input "
                  "from outside it, which would run forever; feed the cycle "
                  "from a source (a task that consumes nothing)") !=
        problems.end());
}

}  // namespace
}  // namespace actorflow::internal
