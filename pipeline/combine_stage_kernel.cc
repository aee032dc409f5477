// pipeline.arith, pipeline.cat, pipeline.stack, pipeline.function and the
// operators of several inputs or outputs (MultiSampleOp): per-sample nodes
// combined, sample by sample.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/concatenate.h"
#include "pipeline/multi_sample_op.h"
#include "pipeline/sample_function.h"
#include "pipeline/stage_kernel_util.h"
#include "pipeline/stage_kernels.h"

namespace actorflow::internal::pipeline {

absl::Status CombineStageKernel::Init(const KernelInitContext& ctx) {
  auto operands = ctx.StringListAttr("operands");
  auto deals = ctx.StringListAttr("deals");
  auto outputs = ctx.StringListAttr("outputs");
  auto batch = PositiveAttr(ctx, "batch_size", 0, 1);
  auto skip = ctx.BoolAttrOr("skip_errors", false);
  auto name = ctx.StringAttrOr("op_name", ctx.task_name());
  auto worker = PositiveAttr(ctx, "worker", 0, 0);
  auto workers = PositiveAttr(ctx, "workers", 1, 1);
  absl::Status ok = FirstError(
      {operands.status(), deals.status(), outputs.status(), batch.status(),
       skip.status(), name.status(), worker.status(), workers.status()});
  if (!ok.ok()) return ok;
  const bool arith = ctx.op_type() == "pipeline.arith";
  if (operands->empty() || (arith && operands->size() != 2)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'operands': ", arith ? "2" : "at least 1",
                     " blob names, got ", operands->size()));
  }
  if (deals->size() != operands->size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'deals': one per operand (", operands->size(),
                     "), got ", deals->size()));
  }
  is_arith_ = arith;
  multi_ = MakeMultiSampleOp(ctx.op_type().substr(sizeof("pipeline.") - 1));
  const bool function = ctx.op_type() == "pipeline.function";
  const bool several = function || multi_ != nullptr;
  if (outputs->empty() || (!several && outputs->size() != 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'outputs': ", several ? "at least 1" : "1",
                     " sample list name(s), got ", outputs->size()));
  }
  if (multi_ != nullptr) {
    auto seed = ctx.IntAttrOr("seed", 0);
    auto op_index = ctx.IntAttrOr("op_index", 0);
    if (ok.ok()) ok = FirstError({seed.status(), op_index.status()});
    if (ok.ok()) ok = multi_->Init(ctx);
    if (!ok.ok()) return ok;
    seed_ = static_cast<uint64_t>(*seed);
    op_index_ = static_cast<uint64_t>(*op_index);
  } else if (arith) {
    auto op = ctx.StringAttr("op");
    if (!op.ok()) return op.status();
    auto parsed = ParseArithOp(*op);
    if (!parsed.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'op': ", parsed.status().message()));
    }
    arith_ = *parsed;
  } else if (function) {
    auto id = ctx.IntAttr("function");
    if (!id.ok()) return id.status();
    function_ = FindSampleFunction(*id);
    if (function_ == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'function': no sample function ", *id,
                       " is registered in this process"));
    }
  } else {
    auto axis = ctx.IntAttr("axis");
    if (!axis.ok()) return axis.status();
    axis_ = *axis;
    stack_ = ctx.op_type() == "pipeline.stack";
  }
  // Operands of one node read one register: a task consumes each once.
  if (ok.ok()) ok = ctx.ExpectInputs(1, static_cast<int>(operands->size()));
  if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/true);
  if (!ok.ok()) return ok;
  operands_.clear();
  for (size_t k = 0; k < operands->size(); ++k) {
    const std::string& deal = (*deals)[k];
    if (deal != "all" && deal != "static") {
      return absl::InvalidArgumentError(absl::StrCat(
          "attr 'deals'[", k, "]: \"all\" or \"static\", got \"", deal, "\""));
    }
    Operand operand{(*operands)[k], -1, deal == "static", {}};
    for (size_t r = 0; r < ctx.inputs().size() && operand.input < 0; ++r) {
      for (const BlobDesc& desc : ctx.inputs()[r].blobs) {
        if (desc.name == operand.blob) operand.input = static_cast<int>(r);
      }
    }
    if (operand.input < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'operands'[", k,
                       "]: no input holds a sample "
                       "list '",
                       operand.blob, "'"));
    }
    operands_.push_back(std::move(operand));
  }
  outputs_ = *outputs;
  op_name_ = *name;
  skip_errors_ = *skip;
  worker_ = *worker;
  workers_ = *workers;
  return ctx.SetOutputBlobs("out", SampleListBlobs(outputs_, *batch));
}

absl::Status CombineStageKernel::Combine(const SampleHeader& h,
                                         absl::Span<const SampleRef> parts,
                                         absl::Span<Sample> outs) const {
  if (multi_ != nullptr) {
    SampleRng rng(seed_, op_index_, static_cast<uint64_t>(h.epoch),
                  static_cast<uint64_t>(h.position));
    return multi_->Apply(parts, &rng, outs);
  }
  if (function_ != nullptr) return function_->Call(parts, outs);
  if (is_arith_) return Arith(parts[0], parts[1], arith_, &outs[0]);
  return Concatenate(parts, axis_, stack_, &outs[0]);
}

absl::Status CombineStageKernel::Forward(KernelContext* ctx) {
  auto chunk = ReadChunk(ctx->input(0));
  if (!chunk.ok()) return chunk.status();
  // Each operand's samples this worker takes, in order.
  std::vector<std::vector<const SampleHeader*>> mine(operands_.size());
  for (size_t k = 0; k < operands_.size(); ++k) {
    const Operand& operand = operands_[k];
    auto list =
        SampleListView::Of(ctx->input(operand.input).blob(operand.blob));
    if (!list.ok()) return list.status();
    for (int64_t i = 0; i < list->size(); ++i) {
      const SampleHeader& h = list->header(i);
      if (!operand.dealt || h.position % workers_ == worker_) {
        mine[k].push_back(&h);
      }
    }
    if (mine[k].size() != mine[0].size()) {
      return absl::InternalError(absl::StrCat(
          op_name_, ": its inputs 0 and ", k, " hold ", mine[0].size(), " and ",
          mine[k].size(), " samples of chunk ", chunk->chunk));
    }
  }
  RegisterView out = ctx->output(0);
  std::vector<SampleListWriter> writers;
  writers.reserve(outputs_.size());
  for (const std::string& output : outputs_) {
    writers.emplace_back(out.blob(output), &slots_);
  }
  std::vector<SampleRef> parts(operands_.size());
  std::vector<SampleSlots::Slot*> slots(outputs_.size());
  for (size_t i = 0; i < mine[0].size(); ++i) {
    const SampleHeader& first = *mine[0][i];
    // Dropped upstream: that input's error text goes on.
    const SampleHeader* dropped = nullptr;
    for (size_t k = 0; k < operands_.size(); ++k) {
      const SampleHeader& h = *mine[k][i];
      if (h.position != first.position || h.epoch != first.epoch) {
        return absl::InternalError(
            absl::StrCat(op_name_, ": its inputs disagree on sample ", i,
                         " of chunk ", chunk->chunk, " (positions ",
                         first.position, " and ", h.position, ")"));
      }
      if (dropped == nullptr && h.dropped) dropped = &h;
    }
    const absl::string_view name = NameOf(first);
    for (size_t o = 0; o < outputs_.size(); ++o) {
      slots[o] = writers[o].Next();
      slots[o]->name.assign(name.data(), name.size());
    }
    bool failed = dropped != nullptr;
    if (dropped == nullptr) {
      absl::Status applied;
      for (size_t k = 0; k < operands_.size() && applied.ok(); ++k) {
        auto part = Materialize(*mine[k][i], &operands_[k].file);
        if (part.ok()) parts[k] = *part;
        applied = part.status();
      }
      if (applied.ok()) {
        // The outputs are made in scratch, then swapped into the slots: a
        // function fills all its outputs at once.
        results_.resize(outputs_.size());
        applied = Combine(first, parts, absl::MakeSpan(results_));
        for (size_t o = 0; applied.ok() && o < outputs_.size(); ++o) {
          std::swap(slots[o]->sample, results_[o]);
        }
      }
      if (!applied.ok()) {
        applied = SampleError(op_name_, first, applied);
        if (!skip_errors_) return applied;
        for (SampleSlots::Slot* slot : slots) FillDropped(applied, slot);
        failed = true;
      }
    } else {
      const SampleRef text = RefOf(*dropped);
      const int64_t shape[] = {text.bytes};
      for (SampleSlots::Slot* slot : slots) {
        slot->sample.Reshape(DT_UINT8, shape);
        std::memcpy(slot->sample.storage.data(), text.data, text.bytes);
      }
    }
    for (SampleListWriter& writer : writers) {
      absl::Status ok = writer.Commit(first, failed);
      if (!ok.ok()) return ok;
    }
  }
  for (SampleListWriter& writer : writers) {
    absl::Status ok = writer.Finish(*ctx);
    if (!ok.ok()) return ok;
  }
  return WriteChunk(out, *chunk);
}

ACTORFLOW_REGISTER_KERNEL("pipeline.arith", CombineStageKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.cat", CombineStageKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.stack", CombineStageKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.function", CombineStageKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.random_bbox_crop", CombineStageKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.box_encoder", CombineStageKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.slice_at", CombineStageKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.decode_slice", CombineStageKernel);

}  // namespace actorflow::internal::pipeline
