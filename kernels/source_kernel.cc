#include "kernels/builtin_kernels.h"
#include "kernels/convert.h"

namespace actorflow::internal {

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
  RegisterView out = ctx->output(0);
  const double value = ValueOf(ctx->piece_id());
  for (int b = 0; b < out.num_blobs(); ++b) {
    TensorView blob = out.blob(b);
    absl::Status status = VisitDataType(blob.data_type(), [&](auto tag) {
      using T = typename decltype(tag)::type;
      absl::StatusOr<absl::Span<T>> data = blob.mutable_data<T>();
      if (!data.ok()) return data.status();
      const T element = ConvertElement<T>(value);
      for (T& x : *data) x = element;
      return absl::OkStatus();
    });
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

ACTORFLOW_REGISTER_KERNEL("source", SourceKernel);

}  // namespace actorflow::internal
