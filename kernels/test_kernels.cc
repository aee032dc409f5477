// Kernels for testing and benchmarking the runtime:
//   spin  busy-waits attr `us` (int) microseconds, then copies in to out if
//         it has an output
//   fail  returns an error at piece attr `at_piece` (int), identity otherwise
#include <chrono>

#include "absl/strings/str_cat.h"
#include "kernels/builtin_kernels.h"

namespace actorflow::internal {
namespace {

absl::Status CopyThrough(KernelContext* ctx) {
  if (ctx->num_outputs() == 0) return absl::OkStatus();
  return CopyBlobs(ctx->input(0), ctx->output(0));
}

}  // namespace

absl::Status InitPassThrough(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, 1);
  if (status.ok()) status = ctx.ExpectOptionalOutput();
  if (status.ok()) status = ctx.InferOutputsLikeInput();
  return status;
}

absl::Status SpinKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = InitPassThrough(ctx);
  if (!status.ok()) return status;
  absl::StatusOr<int64_t> us = ctx.IntAttr("us");
  if (!us.ok()) return us.status();
  if (*us < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['us']: must be >= 0, got ", *us));
  }
  spin_ = std::chrono::microseconds(*us);
  return absl::OkStatus();
}

absl::Status SpinKernel::Forward(KernelContext* ctx) {
  auto until = std::chrono::steady_clock::now() + spin_;
  while (std::chrono::steady_clock::now() < until) {
  }
  return CopyThrough(ctx);
}

namespace {

class FailKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = InitPassThrough(ctx);
    if (!status.ok()) return status;
    absl::StatusOr<int64_t> at = ctx.IntAttr("at_piece");
    if (!at.ok()) return at.status();
    at_piece_ = *at;
    return absl::OkStatus();
  }
  absl::Status Forward(KernelContext* ctx) override {
    if (ctx->piece_id() == at_piece_) {
      return absl::AbortedError(
          absl::StrCat("fail kernel: reached at_piece ", at_piece_));
    }
    return CopyThrough(ctx);
  }

 private:
  int64_t at_piece_ = 0;
};

ACTORFLOW_REGISTER_KERNEL("spin", SpinKernel);
ACTORFLOW_REGISTER_KERNEL("fail", FailKernel);

}  // namespace
}  // namespace actorflow::internal
