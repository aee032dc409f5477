// The pipeline's GPU half: a mixed batch (assembled on the host, copied to
// the device) and normalize and cast on a GPU stream must give the bytes
// the CPU kernels give, batch for batch, on Fashion-MNIST. Prints SKIPPED
// where no GPU is usable (CI runs it on the emulated device).
#include <catch2/catch.hpp>
#include <cstring>

#include "actorflow/pipeline.h"
#include "pipeline/dataset.h"
#include "plan/plan_builder.h"
#include "tests/gpu_test_util.h"

namespace actorflow::internal::pipeline {
namespace {

std::unique_ptr<Pipeline> Normalized(bool gpu) {
  PipelineOptions options;
  options.batch_size = 128;
  options.num_threads = 2;
  options.prefetch_depth = 2;
  options.gpu_prefetch_depth = 3;
  auto pipe = std::make_unique<Pipeline>(options);
  const std::string dir = FashionMnistDir();
  pipe->Add(OperatorDef{
      .op = "idx_reader",
      .name = "reader",
      .outputs = {"raw", "label"},
      .attrs = {{"images", StringAttr(dir + "/t10k-images-idx3-ubyte.gz")},
                {"labels", StringAttr(dir + "/t10k-labels-idx1-ubyte.gz")}}});
  pipe->Add(OperatorDef{.op = "batch",
                        .inputs = {"raw", "label"},
                        .outputs = {"images", "labels"},
                        .device = gpu ? "mixed" : "cpu"});
  pipe->Add(OperatorDef{.op = "normalize",
                        .inputs = {"images"},
                        .outputs = {"normalized"},
                        .device = gpu ? "gpu" : "cpu",
                        .attrs = {{"mean", FloatListAttr({72.94})},
                                  {"std", FloatListAttr({90.02})}}});
  pipe->Add(OperatorDef{.op = "cast",
                        .inputs = {"normalized"},
                        .outputs = {"wide"},
                        .device = gpu ? "gpu" : "cpu",
                        .attrs = {{"to", StringAttr("float64")}}});
  pipe->SetOutputs({"wide", "labels"});
  return pipe;
}

TEST_CASE("GPU: a mixed batch normalized on the device matches the CPU") {
  if (!testing::GpuOrSkip("pipeline normalize on a GPU stream")) return;
  auto cpu = Normalized(false);
  auto gpu = Normalized(true);
  absl::Status built = cpu->Build();
  INFO(built.message());
  REQUIRE(built.ok());
  built = gpu->Build();
  INFO(built.message());
  REQUIRE(built.ok());
  // The device copy and kernels are tasks of the plan like any other.
  int device_tasks = 0;
  for (const TaskProto& task : gpu->plan().task()) {
    device_tasks += task.stream().device_type() == DeviceKinds::GPU;
  }
  // The compiler copies up only what a GPU operator reads: the images
  // (h2d), normalize, cast, and the result back (d2h). The labels are
  // fetched from the host batch.
  CHECK(device_tasks == 4);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(cpu->Run().ok());
    REQUIRE(gpu->Run().ok());
  }
  int batches = 0;
  while (true) {
    auto a = cpu->Outputs();
    auto b = gpu->Outputs();
    if (absl::IsOutOfRange(a.status())) {
      CHECK(absl::IsOutOfRange(b.status()));
      break;
    }
    INFO(b.status().message());
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    for (size_t k = 0; k < 2; ++k) {
      ConstTensorView x = a->outputs[k].data();
      ConstTensorView y = b->outputs[k].data();
      REQUIRE(x.shape() == y.shape());
      REQUIRE(x.data_type() == y.data_type());
      REQUIRE(std::memcmp(x.raw_data(), y.raw_data(), x.byte_size()) == 0);
    }
    auto values = a->outputs[0].data().data<double>();
    REQUIRE(values.ok());
    CHECK((*values)[0] == Approx((0 - 72.94) / 90.02).epsilon(1e-6));
    ++batches;
    REQUIRE(cpu->Run().ok());
    REQUIRE(gpu->Run().ok());
  }
  CHECK(batches == 79);  // 10000 images in batches of 128
}

}  // namespace
}  // namespace actorflow::internal::pipeline
