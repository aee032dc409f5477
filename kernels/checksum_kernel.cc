#include "kernels/builtin_kernels.h"

namespace actorflow::internal {

absl::Status ChecksumKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, 1);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/false);
  return status;
}

absl::Status ChecksumKernel::Forward(KernelContext* ctx) {
  ConstRegisterView in = ctx->input(0);
  double sum = 0;
  for (int b = 0; b < in.num_blobs(); ++b) {
    ConstTensorView blob = in.blob(b);
    absl::Status status = VisitDataType(blob.data_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      absl::StatusOr<absl::Span<const T>> data = blob.data<T>();
      if (!data.ok()) return data.status();
      for (T x : *data) sum += static_cast<double>(x);
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
  }
  CountPiece(ctx->piece_id(), sum);
  return absl::OkStatus();
}

absl::Status ChecksumKernel::SaveState(const KernelStateContext&,
                                       KernelState* state) {
  const std::optional<SinkSummary> summary = sink_summary();
  state->AddScalar<int64_t>("pieces", summary->pieces);
  state->AddScalar<double>("checksum", summary->checksum);
  state->AddScalar<bool>("in_order", summary->in_order);
  return absl::OkStatus();
}

absl::Status ChecksumKernel::RestoreState(const KernelStateContext&,
                                          const KernelState& state) {
  auto pieces = state.Scalar<int64_t>("pieces");
  if (!pieces.ok()) return pieces.status();
  auto checksum = state.Scalar<double>("checksum");
  if (!checksum.ok()) return checksum.status();
  auto in_order = state.Scalar<bool>("in_order");
  if (!in_order.ok()) return in_order.status();
  summary_.pieces = *pieces;
  summary_.checksum = *checksum;
  summary_.in_order = *in_order;
  return absl::OkStatus();
}

ACTORFLOW_REGISTER_KERNEL("checksum", ChecksumKernel);

}  // namespace actorflow::internal
