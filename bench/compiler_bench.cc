// How compile time grows with a job's size: jobs of 10, 1,000 and 10,000
// operators (sources, then scale/add/identity operators reading recent
// ones, a quarter data parallel over 2-4 CPU devices so boxing is
// inserted, every output read by a checksum), compiled by CompileJob.
// Prints the median time per job and per operator, and the ratio of the
// per-operator times against the 1,000-operator job: near 1 when the
// compiler grows linearly.
//
//   tools/bazel run //bench:compiler_bench [-- --samples=5]
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "actorflow/job_builder.h"
#include "actorflow/job_compiler.h"
#include "bench/bench_util.h"

namespace actorflow::internal {
namespace {

Job MakeJob(int ops, uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int n) { return static_cast<int>(rng() % n); };
  JobBuilder job(10);
  std::vector<std::string> names;
  const int sources = std::max(1, ops / 50);
  for (int s = 0; s < sources; ++s) {
    names.push_back("src" + std::to_string(s));
    job.Op(names.back(), "source").Shape({16, 8});
  }
  std::vector<bool> read(ops, false);
  for (int i = static_cast<int>(names.size()); i < ops; ++i) {
    const std::string name = "op" + std::to_string(i);
    // Inputs from the last 20 operators: a wide, deep graph.
    auto recent = [&] {
      const int n = static_cast<int>(names.size());
      const int k = n - 1 - pick(std::min(n, 20));
      read[k] = true;
      return names[k];
    };
    const int kind = pick(3);
    auto op = job.Op(name, kind == 0   ? "scale"
                           : kind == 1 ? "add"
                                       : "identity")
                  .Input(recent());
    if (kind == 0) op.Attr("factor", 2.0);
    if (kind == 1) op.Input(recent());
    if (pick(4) == 0) {
      std::vector<int32_t> devices;
      for (int d = 0; d < 2 + pick(3); ++d) devices.push_back(d);
      op.Place(DeviceKind::kCpu, devices);
    }
    names.push_back(name);
  }
  for (size_t k = 0; k < names.size(); ++k) {
    if (!read[k])
      job.Op("sink" + std::to_string(k), "checksum").Input(names[k]);
  }
  return job.job();
}

}  // namespace
}  // namespace actorflow::internal

int main(int argc, char** argv) {
  using namespace actorflow;            // NOLINT(build/namespaces)
  using namespace actorflow::internal;  // NOLINT(build/namespaces)
  int64_t samples = 5;
  bench::ParseFlags(
      "compiler_bench", argc, argv,
      {{"samples", &samples, "compilations per job size (median shown)"}},
      "Compile time of jobs of 10, 1000 and 10000 operators.");
  std::printf("%8s %8s %8s %12s %12s %10s\n", "ops", "tasks", "boxing",
              "ms/job", "us/op", "vs 1000");
  double per_op_1000 = 0;
  for (int ops : {10, 1000, 10000}) {
    const Job job = MakeJob(ops, 42);
    JobCompileReport report;
    const double ms = bench::MedianOf(static_cast<int>(samples), 1, [&] {
      const int64_t start = bench::NowNs();
      absl::StatusOr<CompiledJob> compiled = CompileJob(job);
      const double elapsed = (bench::NowNs() - start) / 1e6;
      if (!compiled.ok()) {
        std::fprintf(stderr, "compile failed: %s\n",
                     std::string(compiled.status().message()).c_str());
        std::exit(1);
      }
      report = compiled->report;
      return elapsed;
    });
    const double per_op = ms * 1000 / job.op_size();
    if (ops == 1000) per_op_1000 = per_op;
    std::printf(
        "%8d %8d %8d %12.2f %12.2f %10s\n", job.op_size(), report.tasks,
        report.boxing, ms, per_op,
        per_op_1000 > 0
            ? (std::to_string(per_op / per_op_1000).substr(0, 5) + "x").c_str()
            : "-");
  }
  return 0;
}
