#include "kernels/builtin_kernels.h"

namespace actorflow {

absl::Status ChecksumKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, 1);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/false);
  return status;
}

absl::Status ChecksumKernel::Forward(KernelContext* ctx) {
  const Regst* in = ctx->inputs()[0];
  const float* data = in->data();
  double sum = 0;
  for (int64_t i = 0; i < in->elem_cnt(); ++i) sum += data[i];
  CountPiece(ctx->piece_id(), sum);
  return absl::OkStatus();
}

REGISTER_KERNEL("checksum", ChecksumKernel);

}  // namespace actorflow
