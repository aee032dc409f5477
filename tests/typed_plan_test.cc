// Typed, shaped registers through whole plans: shape inference and its
// errors (word for word), every data type through cast/identity/add chains
// on CPU streams and host asynchronous streams, and dynamic shapes. The
// same plans on GPU streams are in typed_gpu_test.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/data_type.h"
#include "actorflow/plan_validator.h"
#include "plan/plan_builder.h"
#include "runtime/runtime.h"
#include "tests/typed_plans.h"

namespace actorflow::internal {
namespace {

absl::Status NoGpu(int) {
  return absl::UnavailableError("no GPU in this test");
}

std::vector<std::string> Problems(const Plan& plan) {
  return ValidatePlan(plan, NoGpu);
}

std::string OnlyProblem(const Plan& plan) {
  std::vector<std::string> problems = Problems(plan);
  INFO(absl::StrJoin(problems, "\n"));
  REQUIRE(problems.size() == 1);
  return problems[0];
}

using testing::ChainChecksum;
using testing::DynamicChain;
using testing::DynamicChecksum;
using testing::MustBuild;
using testing::Streams;
using testing::TypeChain;

RegisterDescProto& Out(Plan& plan, int task) {
  return (*plan.mutable_task(task)->mutable_produced_regst_desc())["out"];
}

// src (stated uint8 [4, 3]) -> cast to float32 -> scale -> sink; only the
// source states its shape.
Plan InferredChain() {
  TaskDef src{.name = "src", .op_type = "source"};
  src.blobs = {BlobProto("img", DT_UINT8, {4, 3})};
  TaskDef cast{.name = "cast", .op_type = "cast", .inputs = {"src"}};
  cast.attrs["to"] = StringAttr("float32");
  cast.infer_output = true;
  TaskDef scale{.name = "scale", .op_type = "scale", .inputs = {"cast"}};
  scale.attrs["factor"] = FloatAttr(0.5);
  scale.infer_output = true;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"scale"}};
  sink.has_output = false;
  return MustBuild({src, cast, scale, sink}, 3);
}

TEST_CASE("shape inference fills in what the plan leaves out",
          "[typed][inference]") {
  Plan plan = InferredChain();
  CHECK(Problems(plan).empty());
  CompileOptions options;
  options.probe = NoGpu;
  auto compiled = CompilePlan(plan, options);
  REQUIRE(compiled.ok());
  CHECK(DescribeShapes(**compiled) ==
        "task 'src' (task_id 1) out (regst_desc 10, register_num 2): img: "
        "uint8 [4, 3]\n"
        "task 'cast' (task_id 2) out (regst_desc 20, register_num 2): img: "
        "float32 [4, 3]\n"
        "task 'scale' (task_id 3) out (regst_desc 30, register_num 2): img: "
        "float32 [4, 3]\n");
  // The compiled plan states every register's blobs.
  const RegisterDescProto& scaled =
      (*compiled)->plan.task(2).produced_regst_desc().at("out");
  REQUIRE(scaled.blob_size() == 1);
  CHECK(scaled.blob(0).data_type() == DataTypes::DT_FLOAT32);
  // Values: piece p is p (source step 1) as uint8, as float, halved.
  auto result = RunPlan(plan);
  REQUIRE(result.ok());
  CHECK(result->sinks.at("sink").checksum == 12 * 0.5 * (0 + 1 + 2));
}

TEST_CASE("a stated output must match inference, word for word",
          "[typed][inference]") {
  Plan plan = InferredChain();
  RegisterDescProto& cast = Out(plan, 1);
  SECTION("data type") {
    *cast.add_blob() = BlobProto("img", DT_FLOAT64, {4, 3});
    CHECK(OnlyProblem(plan) ==
          "task 'cast' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20): blob 'img'.data_type: the plan states float64, but shape "
          "inference gives float32");
  }
  SECTION("dimension") {
    *cast.add_blob() = BlobProto("img", DT_FLOAT32, {4, 5});
    CHECK(OnlyProblem(plan) ==
          "task 'cast' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20): blob 'img'.shape: dimension 1 is 5 in the plan, but shape "
          "inference gives 3 ([4, 3])");
  }
  SECTION("rank") {
    *cast.add_blob() = BlobProto("img", DT_FLOAT32, {12});
    CHECK(OnlyProblem(plan) ==
          "task 'cast' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20): blob 'img'.shape: the plan states [12] (rank 1), but shape "
          "inference gives [4, 3] (rank 2)");
  }
  SECTION("name") {
    *cast.add_blob() = BlobProto("image", DT_FLOAT32, {4, 3});
    CHECK(OnlyProblem(plan) ==
          "task 'cast' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20): blob[0].name: the plan states 'image', but shape inference "
          "gives 'img'");
  }
  SECTION("dynamic") {
    *cast.add_blob() = BlobProto("img", DT_FLOAT32, {4, 3}, true);
    CHECK(OnlyProblem(plan) ==
          "task 'cast' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20): blob 'img'.is_dynamic: the plan states true, but shape "
          "inference gives false");
  }
  SECTION("count") {
    *cast.add_blob() = BlobProto("img", DT_FLOAT32, {4, 3});
    *cast.add_blob() = BlobProto("extra", DT_FLOAT32, {1});
    CHECK(OnlyProblem(plan) ==
          "task 'cast' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20): the plan states 2 blobs, but shape inference gives 1 (img: "
          "float32 [4, 3])");
  }
  SECTION("elem_cnt alone states a size; inference gives the rest") {
    cast.set_elem_cnt(12);
    CHECK(Problems(plan).empty());
    CompileOptions options;
    options.probe = NoGpu;
    auto compiled = CompilePlan(plan, options);
    REQUIRE(compiled.ok());
    CHECK((*compiled)->blobs.at(20)[0].ToString() == "img: float32 [4, 3]");
    cast.set_elem_cnt(10);
    CHECK(OnlyProblem(plan) ==
          "task 'cast' (task_id 2): produced_regst_desc['out'] (regst_desc "
          "20): elem_cnt: is 10, but shape inference gives 12 elements (img: "
          "float32 [4, 3])");
  }
  SECTION("an old plan gains cast and head without restating registers") {
    // Every output stated by elem_cnt, as plans from before blobs are.
    Out(plan, 0).clear_blob();
    Out(plan, 0).set_elem_cnt(12);
    (*plan.mutable_task(1)->mutable_kernel()->mutable_attr())["to"] =
        StringAttr("int8");
    cast.set_elem_cnt(12);
    plan.mutable_task(2)->mutable_kernel()->set_op_type("head");
    (*plan.mutable_task(2)->mutable_kernel()->mutable_attr())["mod"] =
        IntAttr(5);
    Out(plan, 2).set_elem_cnt(12);
    CHECK(Problems(plan).empty());
    auto result = RunPlan(plan);
    REQUIRE(result.ok());
    // Pieces 0, 1, 2 as int8, keeping 1, 2 and 3 of their 12 elements.
    CHECK(result->sinks.at("sink").checksum == 0 * 1 + 1 * 2 + 2 * 3);
  }
  SECTION("elem_cnt and blobs that disagree") {
    Out(plan, 0).set_elem_cnt(10);
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).elem_cnt: is 10, but its blobs hold 12 elements (state one or "
          "the other)");
  }
  SECTION("a bad blob entry is reported once, not again downstream") {
    Out(plan, 0).mutable_blob(0)->set_shape(1, -3);
    CHECK(OnlyProblem(plan) ==
          "task 'src' (task_id 1): produced_regst_desc['out'] (regst_desc "
          "10).blob 'img'.shape: dimension 1 must be >= 0, got -3");
  }
  SECTION("a kernel that refuses its input type") {
    (*plan.mutable_task(1)->mutable_kernel()->mutable_attr())["to"] =
        StringAttr("int64");
    CHECK(OnlyProblem(plan) ==
          "task 'scale' (task_id 3): consumed_regst_desc_id['in']: blob 'img' "
          "of regst_desc 20 is int64; scale takes float32, float64");
  }
}

TEST_CASE("every data type through cast, identity and add chains",
          "[typed][runtime]") {
  int count = 0;
  const DataType* all = AllDataTypes(&count);
  const int64_t pieces = 40;
  for (Streams streams : {Streams::kCpu, Streams::kHostAsync}) {
    for (int t = 0; t < count; ++t) {
      INFO("type " << DataTypeName(all[t]) << ", streams "
                   << static_cast<int>(streams));
      Plan plan = TypeChain(all[t], streams, pieces);
      auto result = RunPlan(plan);
      INFO(result.status().ToString());
      REQUIRE(result.ok());
      const SinkSummary& sink = result->sinks.at("sink");
      CHECK(sink.pieces == pieces);
      CHECK(sink.in_order);
      CHECK(sink.checksum == ChainChecksum(all[t], 5, pieces));
    }
  }
}

TEST_CASE("dynamic shapes reach every consumer", "[typed][dynamic]") {
  auto result = RunPlan(DynamicChain(false, 101));
  REQUIRE(result.ok());
  CHECK(result->sinks.at("sink").checksum == DynamicChecksum(101));
}

}  // namespace
}  // namespace actorflow::internal
