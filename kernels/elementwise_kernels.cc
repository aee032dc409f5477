// Element-wise kernels over equally sized float registers:
//   identity  out = in
//   scale     out = float(in * factor)       (attr factor: float, required)
//   add       out = in[0] + in[1] + ...      (float, summed in list order)
#include <cstring>

#include "actor/kernel.h"

namespace actorflow {
namespace {

absl::Status ExpectUnary(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, 1);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (status.ok()) status = ctx.ExpectSameElemCnt();
  return status;
}

class IdentityKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    return ExpectUnary(ctx);
  }
  absl::Status Forward(KernelContext* ctx) override {
    const Regst* in = ctx->inputs()[0];
    Regst* out = ctx->outputs()[0];
    if (out->elem_cnt() > 0) {
      std::memcpy(out->data(), in->data(), out->elem_cnt() * sizeof(float));
    }
    return absl::OkStatus();
  }
};

class ScaleKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = ExpectUnary(ctx);
    if (!status.ok()) return status;
    absl::StatusOr<double> factor = ctx.FloatAttr("factor");
    if (!factor.ok()) return factor.status();
    factor_ = *factor;
    return absl::OkStatus();
  }
  absl::Status Forward(KernelContext* ctx) override {
    const float* in = ctx->inputs()[0]->data();
    Regst* out = ctx->outputs()[0];
    float* data = out->data();
    for (int64_t i = 0; i < out->elem_cnt(); ++i) {
      data[i] = static_cast<float>(static_cast<double>(in[i]) * factor_);
    }
    return absl::OkStatus();
  }

 private:
  double factor_ = 1;
};

class AddKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = ctx.ExpectInputs(1, INT32_MAX);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
    if (status.ok()) status = ctx.ExpectSameElemCnt();
    return status;
  }
  absl::Status Forward(KernelContext* ctx) override {
    absl::Span<Regst* const> ins = ctx->inputs();
    Regst* out = ctx->outputs()[0];
    float* data = out->data();
    int64_t n = out->elem_cnt();
    if (n == 0) return absl::OkStatus();
    std::memcpy(data, ins[0]->data(), n * sizeof(float));
    for (size_t k = 1; k < ins.size(); ++k) {
      const float* in = ins[k]->data();
      for (int64_t i = 0; i < n; ++i) data[i] += in[i];
    }
    return absl::OkStatus();
  }
};

REGISTER_KERNEL("identity", IdentityKernel);
REGISTER_KERNEL("scale", ScaleKernel);
REGISTER_KERNEL("add", AddKernel);

}  // namespace
}  // namespace actorflow
