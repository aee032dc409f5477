// A kernel library built outside actorflow: out = in * scale + shift,
// element-wise, on float32 blobs. Build it with the Makefile beside this
// file against actorflow's SDK, then load it where the plan runs:
//
//   actorflow run examples/plugin/affine.pbtxt --load=libaffine_kernels.so
//
// The library links nothing of actorflow: the process that loads it (the
// actorflow command, a program linked with libactorflow.so, the Python
// package) provides the symbols it refers to.
#include <actorflow/kernel.h>

namespace example {

class AffineKernel final : public actorflow::Kernel {
 public:
  // Once, before the plan runs (also for `actorflow validate`): check the
  // attributes and the signature, and state the output's blobs.
  absl::Status Init(const actorflow::KernelInitContext& ctx) override {
    absl::StatusOr<double> scale = ctx.FloatAttrOr("scale", 1.0);
    if (!scale.ok()) return scale.status();
    absl::StatusOr<double> shift = ctx.FloatAttrOr("shift", 0.0);
    if (!shift.ok()) return shift.status();
    scale_ = static_cast<float>(*scale);
    shift_ = static_cast<float>(*shift);
    absl::Status status = ctx.ExpectInputs(1, 1);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
    if (status.ok()) status = ctx.ExpectInputTypes({actorflow::DT_FLOAT32});
    if (status.ok()) status = ctx.InferOutputsLikeInput();
    return status;
  }

  // Once per piece, on the task's thread.
  absl::Status Forward(actorflow::KernelContext* ctx) override {
    for (int b = 0; b < ctx->output("out").num_blobs(); ++b) {
      auto in = ctx->input("in").blob(b).data<float>();
      auto out = ctx->output("out").blob(b).mutable_data<float>();
      if (!in.ok()) return in.status();
      if (!out.ok()) return out.status();
      for (size_t i = 0; i < out->size(); ++i) {
        (*out)[i] = (*in)[i] * scale_ + shift_;
      }
    }
    return absl::OkStatus();
  }

 private:
  float scale_ = 1;
  float shift_ = 0;
};

ACTORFLOW_REGISTER_KERNEL("affine", AffineKernel);

}  // namespace example
