// `source`: produces the pieces. Every element of piece p is value + p*step
// (attrs value, default 0, and step, default 1; floats).
#include "actor/kernel.h"

namespace actorflow {
namespace {

class SourceKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
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

  absl::Status Forward(KernelContext* ctx) override {
    Regst* out = ctx->outputs()[0];
    float element = static_cast<float>(
        value_ + static_cast<double>(ctx->piece_id()) * step_);
    float* data = out->data();
    for (int64_t i = 0; i < out->elem_cnt(); ++i) data[i] = element;
    return absl::OkStatus();
  }

 private:
  double value_ = 0;
  double step_ = 1;
};

REGISTER_KERNEL("source", SourceKernel);

}  // namespace
}  // namespace actorflow
