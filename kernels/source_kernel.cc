#include "kernels/builtin_kernels.h"

namespace actorflow {

absl::Status SourceKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(0, 0);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (!status.ok()) return status;
  absl::StatusOr<double> value = ctx.FloatAttrOr("value", 0.0);
  if (!value.ok()) return value.status();
  absl::StatusOr<double> step = ctx.FloatAttrOr("step", 1.0);
  if (!step.ok()) return step.status();
  value_ = *value;
  step_ = *step;
  return absl::OkStatus();
}

absl::Status SourceKernel::Forward(KernelContext* ctx) {
  Regst* out = ctx->outputs()[0];
  float element = ElementOf(ctx->piece_id());
  float* data = out->data();
  for (int64_t i = 0; i < out->elem_cnt(); ++i) data[i] = element;
  return absl::OkStatus();
}

REGISTER_KERNEL("source", SourceKernel);

}  // namespace actorflow
