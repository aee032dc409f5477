#ifndef ACTORFLOW_TESTS_TYPED_PLANS_H_
#define ACTORFLOW_TESTS_TYPED_PLANS_H_

// Typed plans shared by typed_plan_test (CPU streams) and typed_gpu_test
// (GPU streams), with the checksums they must give.
#include <catch2/catch.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/data_type.h"
#include "kernels/convert.h"
#include "plan/plan_builder.h"

namespace actorflow::internal::testing {

inline Plan MustBuild(const std::vector<TaskDef>& tasks, int64_t pieces) {
  auto plan = BuildPlan(tasks, pieces);
  REQUIRE(plan.ok());
  return *plan;
}

// Expected checksum of: source (float32 [n], value v + p*step) -> cast to
// `type` -> identity -> cast to float64 -> add(x, x) -> checksum.
inline double ChainChecksum(DataType type, int64_t n, int64_t pieces) {
  double total = 0;
  for (int64_t p = 0; p < pieces; ++p) {
    float element = static_cast<float>(-3.5 + static_cast<double>(p) * 1.25);
    double back = VisitDataType(type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      return ConvertElement<double>(ConvertElement<T>(element));
    });
    total += static_cast<double>(n) * (back + back);
  }
  return total;
}

enum class Streams { kCpu, kHostAsync, kGpu };

inline Plan TypeChain(DataType type, Streams streams, int64_t pieces) {
  const bool gpu = streams == Streams::kGpu;
  auto task = [&](std::string name, std::string op, std::vector<std::string> in,
                  int stream) {
    TaskDef def{.name = std::move(name),
                .op_type = std::move(op),
                .inputs = std::move(in)};
    def.stream_index = stream;
    def.host_async = streams == Streams::kHostAsync;
    def.infer_output = true;
    return def;
  };
  TaskDef src = task("src", "source", {}, 0);
  src.host_async = false;
  src.blobs = {BlobProto("x", DT_FLOAT32, {5})};
  src.attrs["value"] = FloatAttr(-3.5);
  src.attrs["step"] = FloatAttr(1.25);
  std::vector<TaskDef> tasks = {src};
  std::string last = "src";
  if (gpu) {
    tasks.push_back(task("h2d", "h2d", {last}, 1));
    last = "h2d";
  }
  TaskDef to = task("to", "cast", {last}, gpu ? 0 : 1);
  to.attrs["to"] = StringAttr(DataTypeName(type));
  TaskDef same = task("same", "identity", {"to"}, gpu ? 0 : 2);
  TaskDef back = task("back", "cast", {"same"}, gpu ? 0 : 1);
  back.attrs["to"] = StringAttr("float64");
  TaskDef twice = task("twice", "add", {"back", "back"}, gpu ? 0 : 2);
  // add consumes "back" twice under one name: two inputs of one register
  // are not allowed, so add a second identity of it.
  TaskDef copy = task("copy", "identity", {"back"}, gpu ? 0 : 1);
  twice.inputs = {"back", "copy"};
  tasks.insert(tasks.end(), {to, same, back, copy, twice});
  last = "twice";
  if (gpu) {
    tasks.push_back(task("d2h", "d2h", {last}, 2));
    last = "d2h";
  }
  TaskDef sink = task("sink", "checksum", {last}, 0);
  sink.host_async = false;
  sink.has_output = false;
  for (TaskDef& def : tasks) {
    if (gpu && def.op_type != "source") def.gpu = true;
  }
  tasks.push_back(sink);
  return MustBuild(tasks, pieces);
}

// src int32 [6] (piece p: p) -> head mod 4 -> [h2d -> identity -> d2h] ->
// sink: piece p keeps 1 + p % 4 values of p.
inline Plan DynamicChain(bool gpu, int64_t pieces) {
  TaskDef src{.name = "src", .op_type = "source"};
  src.blobs = {BlobProto("v", DT_INT32, {6})};
  TaskDef head{.name = "head", .op_type = "head", .inputs = {"src"}};
  head.attrs["mod"] = IntAttr(4);
  head.infer_output = true;
  std::vector<TaskDef> tasks = {src, head};
  std::string last = "head";
  if (gpu) {
    for (const char* op : {"h2d", "identity", "d2h"}) {
      TaskDef def{.name = op, .op_type = op, .inputs = {last}};
      def.gpu = true;
      def.stream_index = static_cast<int>(tasks.size());
      def.infer_output = true;
      tasks.push_back(def);
      last = op;
    }
  }
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {last}};
  sink.has_output = false;
  tasks.push_back(sink);
  return MustBuild(tasks, pieces);
}

inline double DynamicChecksum(int64_t pieces) {
  double total = 0;
  for (int64_t p = 0; p < pieces; ++p) total += (1 + p % 4) * p;
  return total;
}

}  // namespace actorflow::internal::testing

#endif  // ACTORFLOW_TESTS_TYPED_PLANS_H_
