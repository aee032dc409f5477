// `feed` and `fetch`: where a plan meets the program that runs it (see
// actorflow/session.h). Their actors move registers between the plan and the
// caller instead of calling Forward; these classes check the signature.
//   feed   no input; output "out" of exactly one blob, stated in the plan
//          (the caller's tensors must fit it)
//   fetch  one input "in" of exactly one blob; no output
#include "absl/strings/str_cat.h"
#include "actorflow/kernel.h"

namespace actorflow::internal {
namespace {

absl::Status OneBlob(const KernelIo& io, const char* op, const char* field) {
  if (io.blobs.size() == 1) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(field, "['", io.name, "']: ", op,
                   " moves registers of exactly one blob, but regst_desc ",
                   io.regst_desc_id, " has ", io.blobs.size()));
}

absl::Status NotCalled(const char* op) {
  return absl::InternalError(absl::StrCat(
      op,
      " runs only as a boundary actor of a session; its Forward is never "
      "called by the runtime"));
}

class FeedKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = ctx.ExpectInputs(0, 0);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
    if (!status.ok()) return status;
    const KernelIo& out = ctx.outputs()[0];
    if (!out.declared || out.blobs.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "produced_regst_desc['out'] (regst_desc ", out.regst_desc_id,
          ").blob: missing; a feed states the blob its tensors fill"));
    }
    return OneBlob(out, "feed", "produced_regst_desc");
  }
  absl::Status Forward(KernelContext*) override { return NotCalled("feed"); }
};

class FetchKernel final : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = ctx.ExpectInputs(1, 1);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/false);
    if (!status.ok()) return status;
    return OneBlob(ctx.inputs()[0], "fetch", "consumed_regst_desc_id");
  }
  absl::Status Forward(KernelContext*) override { return NotCalled("fetch"); }
};

ACTORFLOW_REGISTER_KERNEL("feed", FeedKernel);
ACTORFLOW_REGISTER_KERNEL("fetch", FetchKernel);

}  // namespace
}  // namespace actorflow::internal
