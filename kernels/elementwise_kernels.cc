#include <cstring>

#include "kernels/builtin_kernels.h"

namespace actorflow {

absl::Status UnaryKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, 1);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (status.ok()) status = ctx.ExpectSameElemCnt();
  return status;
}

absl::Status IdentityKernel::Forward(KernelContext* ctx) {
  const Regst* in = ctx->inputs()[0];
  Regst* out = ctx->outputs()[0];
  if (out->elem_cnt() > 0) {
    std::memcpy(out->data(), in->data(), out->elem_cnt() * sizeof(float));
  }
  return absl::OkStatus();
}

absl::Status ScaleKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = UnaryKernel::Init(ctx);
  if (!status.ok()) return status;
  absl::StatusOr<double> factor = ctx.FloatAttr("factor");
  if (!factor.ok()) return factor.status();
  factor_ = *factor;
  return absl::OkStatus();
}

absl::Status ScaleKernel::Forward(KernelContext* ctx) {
  const float* in = ctx->inputs()[0]->data();
  Regst* out = ctx->outputs()[0];
  float* data = out->data();
  for (int64_t i = 0; i < out->elem_cnt(); ++i) {
    data[i] = static_cast<float>(static_cast<double>(in[i]) * factor_);
  }
  return absl::OkStatus();
}

absl::Status AddKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, INT32_MAX);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (status.ok()) status = ctx.ExpectSameElemCnt();
  return status;
}

absl::Status AddKernel::Forward(KernelContext* ctx) {
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

REGISTER_KERNEL("identity", IdentityKernel);
REGISTER_KERNEL("scale", ScaleKernel);
REGISTER_KERNEL("add", AddKernel);

}  // namespace actorflow
