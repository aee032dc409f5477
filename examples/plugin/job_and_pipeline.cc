// A program outside actorflow's build that writes a job in code and runs
// it, then feeds a data pipeline from memory: the job builder, the job
// compiler, a Session and a Pipeline, from the SDK's headers alone, linked
// with libactorflow.so. Built by the Makefile here:
//
//   make -C examples/plugin ACTORFLOW_SDK=/tmp/sdk job_and_pipeline
//   ./job_and_pipeline
//
// Prints one line per part and exits 0; any error is printed and exits 1.
#include <actorflow/job_builder.h>
#include <actorflow/job_compiler.h>
#include <actorflow/pipeline.h>
#include <actorflow/session.h>
#include <actorflow/tensor.h>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

int Fail(const char* what, const absl::Status& status) {
  std::fprintf(stderr, "job_and_pipeline: %s: %s\n", what,
               status.ToString().c_str());
  return 1;
}

// 100 pieces of 256 elements (piece p holds value + p: 1 + p), doubled on
// two CPU devices, summed by a sink.
int RunJob() {
  actorflow::JobBuilder job(100);
  job.Op("source", "source").Shape({256}).Attr("value", 1.0);
  job.Op("double", "scale")
      .Input("source")
      .Attr("factor", 2.0)
      .Place(actorflow::DeviceKind::kCpu, {0, 1});
  job.Op("sink", "checksum").Input("double");
  absl::StatusOr<actorflow::CompiledJob> compiled =
      actorflow::CompileJob(job.job());
  if (!compiled.ok()) return Fail("CompileJob", compiled.status());
  auto session = actorflow::Session::Create(compiled->plan);
  if (!session.ok()) return Fail("Session::Create", session.status());
  absl::StatusOr<actorflow::RunStats> stats = (*session)->Run(100);
  if (!stats.ok()) return Fail("Run", stats.status());
  const actorflow::SinkSummary sink = (*session)->Sinks().at("sink");
  std::printf("job: %d tasks, %lld pieces, checksum %.17g\n",
              compiled->report.tasks, static_cast<long long>(sink.pieces),
              sink.checksum);
  return 0;
}

// Batches of 4 int32 samples [3] fed from memory, cast to float32.
int RunPipeline() {
  actorflow::PipelineOptions options;
  options.batch_size = 4;
  actorflow::Pipeline pipe(options);
  actorflow::AttrValue dtype, shape, to;
  dtype.set_s("int32");
  shape.mutable_list()->add_i(3);
  to.set_s("float32");
  pipe.Add({.op = "external_source",
            .outputs = {"values"},
            .attrs = {{"dtype", dtype}, {"shape", shape}}});
  pipe.Add({.op = "cast",
            .inputs = {"values"},
            .outputs = {"floats"},
            .attrs = {{"to", to}}});
  pipe.SetOutputs({"floats"});
  if (absl::Status built = pipe.Build(); !built.ok()) {
    return Fail("Pipeline::Build", built);
  }
  double sum = 0;
  for (int round = 0; round < 3; ++round) {
    std::vector<int32_t> values(4 * 3);
    for (size_t i = 0; i < values.size(); ++i) values[i] = round * 100 + i;
    auto batch = actorflow::Tensor::FromValues<int32_t>({4, 3}, values);
    if (!batch.ok()) return Fail("Tensor::FromValues", batch.status());
    if (absl::Status fed = pipe.FeedInput("values", *batch); !fed.ok()) {
      return Fail("FeedInput", fed);
    }
    if (absl::Status run = pipe.Run(); !run.ok()) return Fail("Run", run);
    absl::StatusOr<actorflow::BatchView> out = pipe.Outputs();
    if (!out.ok()) return Fail("Outputs", out.status());
    absl::StatusOr<actorflow::OutputView> floats = out->output("floats");
    if (!floats.ok()) return Fail("output", floats.status());
    absl::StatusOr<absl::Span<const float>> data = floats->data().data<float>();
    if (!data.ok()) return Fail("data", data.status());
    for (float value : *data) sum += value;
  }
  if (absl::Status finished = pipe.Finish(); !finished.ok()) {
    return Fail("Finish", finished);
  }
  std::printf("pipeline: 3 batches, sum %.17g\n", sum);
  return 0;
}

}  // namespace

int main() {
  if (int failed = RunJob(); failed != 0) return failed;
  return RunPipeline();
}
