// pipeline.arith: two per-sample nodes combined, sample by sample.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/stage_kernel_util.h"
#include "pipeline/stage_kernels.h"

namespace actorflow::internal::pipeline {

absl::Status ArithStageKernel::Init(const KernelInitContext& ctx) {
  auto op = ctx.StringAttr("op");
  auto a = ctx.StringAttr("input_a");
  auto b = ctx.StringAttr("input_b");
  auto output = ctx.StringAttr("output");
  auto batch = PositiveAttr(ctx, "batch_size", 0, 1);
  auto skip = ctx.BoolAttrOr("skip_errors", false);
  auto name = ctx.StringAttrOr("op_name", ctx.task_name());
  auto worker = PositiveAttr(ctx, "worker", 0, 0);
  auto workers = PositiveAttr(ctx, "workers", 1, 1);
  auto deal_a = ctx.StringAttrOr("deal_a", "all");
  auto deal_b = ctx.StringAttrOr("deal_b", "all");
  absl::Status ok =
      FirstError({op.status(), a.status(), b.status(), output.status(),
                  batch.status(), skip.status(), name.status(), worker.status(),
                  workers.status(), deal_a.status(), deal_b.status()});
  for (const auto* deal : {&deal_a, &deal_b}) {
    if (ok.ok() && **deal != "all" && **deal != "static") {
      ok = absl::InvalidArgumentError(absl::StrCat(
          "attrs 'deal_a', 'deal_b': \"all\" or \"static\", got \"", **deal,
          "\""));
    }
  }
  // One input when both operands are the same node (x + x).
  if (ok.ok()) ok = ctx.ExpectInputs(1, 2);
  if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/true);
  if (!ok.ok()) return ok;
  auto parsed = ParseArithOp(*op);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'op': ", parsed.status().message()));
  }
  second_input_ = ctx.inputs().size() == 2 ? 1 : 0;
  for (auto [k, blob] : {std::pair{0, *a}, std::pair{second_input_, *b}}) {
    bool found = false;
    for (const BlobDesc& desc : ctx.inputs()[k].blobs) {
      found = found || desc.name == blob;
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attrs 'input_a', 'input_b': regst_desc ",
          ctx.inputs()[k].regst_desc_id, " has no sample list '", blob, "'"));
    }
  }
  op_ = *parsed;
  input_a_ = *a;
  input_b_ = *b;
  output_ = *output;
  op_name_ = *name;
  skip_errors_ = *skip;
  worker_ = *worker;
  workers_ = *workers;
  static_[0] = *deal_a == "static";
  static_[1] = *deal_b == "static";
  return ctx.SetOutputBlobs("out", SampleListBlobs({output_}, *batch));
}

absl::Status ArithStageKernel::Forward(KernelContext* ctx) {
  auto list_a = SampleListView::Of(ctx->input(0).blob(input_a_));
  auto list_b = SampleListView::Of(ctx->input(second_input_).blob(input_b_));
  auto chunk = ReadChunk(ctx->input(0));
  absl::Status ok =
      FirstError({list_a.status(), list_b.status(), chunk.status()});
  if (!ok.ok()) return ok;
  // This worker's samples of each input, in order.
  auto mine = [&](const SampleListView& list, bool dealt) {
    std::vector<const SampleHeader*> headers;
    for (int64_t i = 0; i < list.size(); ++i) {
      const SampleHeader& h = list.header(i);
      if (!dealt || h.position % workers_ == worker_) headers.push_back(&h);
    }
    return headers;
  };
  const auto headers_a = mine(*list_a, static_[0]);
  const auto headers_b = mine(*list_b, static_[1]);
  if (headers_a.size() != headers_b.size()) {
    return absl::InternalError(
        absl::StrCat(op_name_, ": its inputs hold ", headers_a.size(), " and ",
                     headers_b.size(), " samples of chunk ", chunk->chunk));
  }
  RegisterView out = ctx->output(0);
  SampleListWriter writer(out.blob(output_), &slots_);
  for (size_t i = 0; i < headers_a.size(); ++i) {
    const SampleHeader& a = *headers_a[i];
    const SampleHeader& b = *headers_b[i];
    if (a.position != b.position || a.epoch != b.epoch) {
      return absl::InternalError(absl::StrCat(
          op_name_, ": its inputs disagree on sample ", i, " of chunk ",
          chunk->chunk, " (positions ", a.position, " and ", b.position, ")"));
    }
    SampleSlots::Slot* slot = writer.Next();
    const absl::string_view name = NameOf(a);
    slot->name.assign(name.data(), name.size());
    // Dropped upstream: that input's error text goes on.
    const SampleHeader* dropped = a.dropped ? &a : b.dropped ? &b : nullptr;
    bool failed = dropped != nullptr;
    if (dropped == nullptr) {
      auto x = Materialize(a, &file_a_);
      auto y = Materialize(b, &file_b_);
      absl::Status applied = FirstError({x.status(), y.status()});
      if (applied.ok()) applied = Arith(*x, *y, op_, &slot->sample);
      if (!applied.ok()) {
        applied = SampleError(op_name_, a, applied);
        if (!skip_errors_) return applied;
        FillDropped(applied, slot);
        failed = true;
      }
    } else {
      const SampleRef text = RefOf(*dropped);
      const int64_t shape[] = {text.bytes};
      slot->sample.Reshape(DT_UINT8, shape);
      std::memcpy(slot->sample.storage.data(), text.data, text.bytes);
    }
    ok = writer.Commit(a, failed);
    if (!ok.ok()) return ok;
  }
  ok = writer.Finish(*ctx);
  if (!ok.ok()) return ok;
  return WriteChunk(out, *chunk);
}

ACTORFLOW_REGISTER_KERNEL("pipeline.arith", ArithStageKernel);

}  // namespace actorflow::internal::pipeline
