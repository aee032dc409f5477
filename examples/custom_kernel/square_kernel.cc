// A user kernel: out = in * in, element-wise. It lives in its own library
// and registers itself; nothing in actorflow needs to change.
#include "actorflow/kernel.h"

namespace example {

class SquareKernel final : public actorflow::Kernel {
 public:
  // Runs once, when the plan is compiled (also for `actorflow validate`):
  // check the attributes and the signature, and state the output's blobs
  // (here: the input's), never in Forward.
  absl::Status Init(const actorflow::KernelInitContext& ctx) override {
    absl::Status status = ctx.ExpectInputs(1, 1);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
    if (status.ok()) status = ctx.ExpectInputTypes({actorflow::DT_FLOAT32});
    if (status.ok()) status = ctx.InferOutputsLikeInput();
    return status;
  }

  // Runs on the task's thread once per piece; return an error to stop the
  // run with a message that names this task and the piece.
  absl::Status Forward(actorflow::KernelContext* ctx) override {
    for (int b = 0; b < ctx->output("out").num_blobs(); ++b) {
      auto in = ctx->input("in").blob(b).data<float>();
      auto out = ctx->output("out").blob(b).mutable_data<float>();
      if (!in.ok()) return in.status();
      if (!out.ok()) return out.status();
      for (size_t i = 0; i < out->size(); ++i) (*out)[i] = (*in)[i] * (*in)[i];
    }
    return absl::OkStatus();
  }
};

ACTORFLOW_REGISTER_KERNEL("square", SquareKernel);

}  // namespace example
