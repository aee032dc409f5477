// Kernels and helpers the job compiler's tests share: sources and sinks
// whose sums change when an element lands in the wrong place, any numeric
// type, dynamic shapes too.
#ifndef ACTORFLOW_TESTS_JOB_TEST_KERNELS_H_
#define ACTORFLOW_TESTS_JOB_TEST_KERNELS_H_

#include <catch2/catch.hpp>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "actorflow/data_type.h"
#include "actorflow/job_compiler.h"
#include "actorflow/kernel.h"
#include "actorflow/kernel_bindings.h"
#include "actorflow/session.h"
#include "plan/plan_builder.h"

namespace actorflow::internal {
namespace testing {

// test_ramp: element i of piece p is 100 * p + i + `offset`, in the type of
// its stated blob, so a part taken from the wrong place changes every
// weighted sum below.
class RampKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::StatusOr<double> offset = ctx.FloatAttrOr("offset", 0);
    if (!offset.ok()) return offset.status();
    offset_ = *offset;
    return ctx.ExpectOutput(true);
  }
  absl::Status Forward(KernelContext* ctx) override {
    TensorView out = ctx->output(0).blob(0);
    return VisitDataType(out.data_type(), [&](auto tag) -> absl::Status {
      using T = typename decltype(tag)::type;
      auto data = out.mutable_data<T>();
      if (!data.ok()) return data.status();
      for (size_t i = 0; i < data->size(); ++i) {
        (*data)[i] = static_cast<T>(100.0 * ctx->piece_id() +
                                    static_cast<double>(i) + offset_);
      }
      return absl::OkStatus();
    });
  }

 private:
  double offset_ = 0;
};

// test_weighted: a sink whose checksum is the sum over pieces of
// sum_i (i + 1) * x_i over the piece's elements (its actual shape):
// position-sensitive, unlike `checksum`.
class WeightedSinkKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    return ctx.ExpectInputs(1, 1);
  }
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView in = ctx->input(0).blob(0);
    absl::Status status =
        VisitDataType(in.data_type(), [&](auto tag) -> absl::Status {
          using T = typename decltype(tag)::type;
          auto data = in.data<T>();
          if (!data.ok()) return data.status();
          for (size_t i = 0; i < data->size(); ++i) {
            summary_.checksum +=
                static_cast<double>(i + 1) * static_cast<double>((*data)[i]);
          }
          return absl::OkStatus();
        });
    ++summary_.pieces;
    return status;
  }
  std::optional<SinkSummary> sink_summary() const override { return summary_; }

 private:
  SinkSummary summary_;
};

// test_partial: partial sums of its input: the whole on the first task of
// the operator ("x" or "x/0"), zeros on the others.
class PartialKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    first_ = !absl::StrContains(ctx.task_name(), "/") ||
             absl::EndsWith(ctx.task_name(), "/0");
    return ctx.InferOutputsLikeInput();
  }
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView in = ctx->input(0).blob(0);
    TensorView out = ctx->output(0).blob(0);
    if (out.is_dynamic()) {
      absl::Status status = out.set_shape(in.shape());
      if (!status.ok()) return status;
    }
    if (out.byte_size() == 0) return absl::OkStatus();
    if (first_) {
      std::memcpy(out.mutable_raw_data(), in.raw_data(), out.byte_size());
    } else {
      std::memset(out.mutable_raw_data(), 0, out.byte_size());  // 0 in any
    }
    return absl::OkStatus();
  }

 private:
  bool first_ = true;
};

inline KernelBindings TestKernels() {
  KernelBindings bindings;
  bindings.Bind("test_ramp", [] { return std::make_unique<RampKernel>(); });
  bindings.Bind("test_weighted",
                [] { return std::make_unique<WeightedSinkKernel>(); });
  bindings.Bind("test_partial",
                [] { return std::make_unique<PartialKernel>(); });
  return bindings;
}

inline CompiledJob MustCompile(const Job& job,
                               const KernelBindings* bindings = nullptr) {
  JobCompileOptions options;
  options.bindings = bindings;
  options.probe = [](int) { return absl::OkStatus(); };
  absl::StatusOr<CompiledJob> compiled = CompileJob(job, options);
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  return *std::move(compiled);
}

inline std::string CompileError(const Job& job,
                                const KernelBindings* bindings = nullptr) {
  JobCompileOptions options;
  options.bindings = bindings;
  absl::StatusOr<CompiledJob> compiled = CompileJob(job, options);
  REQUIRE_FALSE(compiled.ok());
  return std::string(compiled.status().message());
}

inline std::map<std::string, SinkSummary> RunPlan(
    Plan plan, const KernelBindings& kernels) {
  SessionOptions options;
  options.kernels = kernels;
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(std::move(plan), std::move(options));
  INFO(session.status().message());
  REQUIRE(session.ok());
  absl::StatusOr<RunStats> run = (*session)->Run(-1);
  INFO(run.status().message());
  REQUIRE(run.ok());
  return (*session)->Sinks();
}

}  // namespace testing
}  // namespace actorflow::internal

#endif  // ACTORFLOW_TESTS_JOB_TEST_KERNELS_H_
