// `checksum`: a sink. Sums every element of every piece in double precision
// and checks that pieces arrive in order (0, 1, 2, ...). Its SinkSummary is
// what `actorflow run` reports under the task's name.
#include "actor/kernel.h"

namespace actorflow {
namespace {

class ChecksumKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = ctx.ExpectInputs(1, 1);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/false);
    return status;
  }

  absl::Status Forward(KernelContext* ctx) override {
    const Regst* in = ctx->inputs()[0];
    if (ctx->piece_id() != summary_.pieces) summary_.in_order = false;
    const float* data = in->data();
    double sum = 0;
    for (int64_t i = 0; i < in->elem_cnt(); ++i) sum += data[i];
    summary_.checksum += sum;
    ++summary_.pieces;
    return absl::OkStatus();
  }

  std::optional<SinkSummary> sink_summary() const override { return summary_; }

 private:
  SinkSummary summary_;
};

REGISTER_KERNEL("checksum", ChecksumKernel);

}  // namespace
}  // namespace actorflow
