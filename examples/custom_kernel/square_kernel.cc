// A user kernel: out = in * in, element-wise. It lives in its own library
// and registers itself; nothing in actorflow needs to change.
#include "actor/kernel.h"

namespace example {

class SquareKernel final : public actorflow::Kernel {
 public:
  // Runs before anything executes (also for `actorflow validate`): check
  // the attributes and the signature here, never in Forward.
  absl::Status Init(const actorflow::KernelInitContext& ctx) override {
    absl::Status status = ctx.ExpectInputs(1, 1);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
    if (status.ok()) status = ctx.ExpectSameElemCnt();
    return status;
  }

  // Runs on the task's thread once per piece; return an error to stop the
  // run with a message that names this task and the piece.
  absl::Status Forward(actorflow::KernelContext* ctx) override {
    const actorflow::Regst* in = ctx->inputs("in")[0];
    actorflow::Regst* out = ctx->output("out");
    for (int64_t i = 0; i < out->elem_cnt(); ++i) {
      out->data()[i] = in->data()[i] * in->data()[i];
    }
    return absl::OkStatus();
  }
};

REGISTER_KERNEL("square", SquareKernel);

}  // namespace example
