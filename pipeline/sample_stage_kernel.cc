// The per-sample stages (one op, or a chain of them fused into one actor).
#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/act_context.h"
#include "pipeline/stage_kernel_util.h"
#include "pipeline/stage_kernels.h"

namespace actorflow::internal::pipeline {

namespace {

AttrValue* FindOwnAttr(TaskProto* task, const std::string& name) {
  auto& attrs = *task->mutable_kernel()->mutable_attr();
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

// A resize the fused decoders can take: to a size or a shorter side
// (antialiased or not), with nothing else (mode, max_size, ...) that they
// would not honour.
bool PlainResize(const TaskProto& task) {
  for (const auto& [name, value] : task.kernel().attr()) {
    if (name != "size" && name != "shorter" && name != "antialias") {
      return false;
    }
  }
  return true;
}

// A crop that stays inside the image (out_of_bounds "error"), which
// decode_random_crop does.
bool InsideCrop(const TaskProto& task) {
  const auto& attrs = task.kernel().attr();
  auto policy = attrs.find("out_of_bounds");
  return policy == attrs.end() || policy->second.s() == "error";
}

}  // namespace

// decode, random_resized_crop [, resize to a size] ->
// decode_random_resized_crop, when the crop has no size of its own (else
// the resize stays): the window's rows and columns decoded, then resized
// to the size. It keeps the crop's index, which seeds the window. Returns
// the last operator it took.
template <typename Planned>
size_t FuseAreaCrop(std::vector<Planned>* planned, size_t j,
                    std::vector<Planned>* fused) {
  Planned& crop = (*planned)[j + 1];
  Planned* resize = nullptr;
  if (j + 2 < planned->size() && (*planned)[j + 2].op == "resize" &&
      PlainResize((*planned)[j + 2].own) &&
      FindOwnAttr(&crop.own, "size") == nullptr &&
      FindOwnAttr(&(*planned)[j + 2].own, "size") != nullptr) {
    resize = &(*planned)[j + 2];
  }
  Planned step = std::move((*planned)[j]);
  step.op = "decode_random_resized_crop";
  step.op_index = crop.op_index;
  auto& attrs = *step.own.mutable_kernel()->mutable_attr();
  for (const char* name : {"size", "random_area", "random_aspect_ratio",
                           "num_attempts", "antialias"}) {
    if (AttrValue* v = FindOwnAttr(&crop.own, name)) attrs[name] = *v;
  }
  if (resize != nullptr) {
    // The resize is the fused step's: its size and filter.
    attrs["size"] = *FindOwnAttr(&resize->own, "size");
    attrs.erase("antialias");
    if (AttrValue* v = FindOwnAttr(&resize->own, "antialias")) {
      attrs["antialias"] = *v;
    }
  }
  fused->push_back(std::move(step));
  return resize != nullptr ? j + 2 : j + 1;
}

// decode, [resize,] crop -> decode_random_crop; decode, resize ->
// decode_resize: one step that decodes only what the later ones keep. The
// fused step keeps the decoder's name (its errors are mostly the file's)
// and the crop's index, which seeds its window exactly as the crop's.
template <typename Planned>
std::vector<Planned> FuseDecoders(std::vector<Planned> planned) {
  std::vector<Planned> fused;
  for (size_t j = 0; j < planned.size(); ++j) {
    if (planned[j].op != "decode" || j + 1 == planned.size()) {
      fused.push_back(std::move(planned[j]));
      continue;
    }
    Planned& decode = planned[j];
    if (planned[j + 1].op == "random_resized_crop") {
      j = FuseAreaCrop(&planned, j, &fused);
      continue;
    }
    Planned* resize =
        planned[j + 1].op == "resize" && PlainResize(planned[j + 1].own)
            ? &planned[j + 1]
            : nullptr;
    const size_t crop_at = j + (resize ? 2 : 1);
    Planned* crop = crop_at < planned.size() && planned[crop_at].op == "crop" &&
                            InsideCrop(planned[crop_at].own)
                        ? &planned[crop_at]
                        : nullptr;
    if (resize == nullptr && crop == nullptr) {
      fused.push_back(std::move(planned[j]));
      continue;
    }
    Planned step = std::move(decode);
    auto& attrs = *step.own.mutable_kernel()->mutable_attr();
    if (crop != nullptr) {
      step.op = "decode_random_crop";
      step.op_index = crop->op_index;
      for (const char* name : {"size", "random", "pos"}) {
        if (AttrValue* v = FindOwnAttr(&crop->own, name)) attrs[name] = *v;
      }
      // The crop's own default (centred), not decode_random_crop's.
      if (!attrs.count("random")) attrs["random"].set_b(false);
      if (resize != nullptr) {
        if (AttrValue* v = FindOwnAttr(&resize->own, "size")) {
          attrs["resize_size"] = *v;
        }
        if (AttrValue* v = FindOwnAttr(&resize->own, "shorter")) {
          attrs["resize_shorter"] = *v;
        }
        if (AttrValue* v = FindOwnAttr(&resize->own, "antialias")) {
          attrs["antialias"] = *v;
        }
      }
    } else {
      step.op = "decode_resize";
      for (const char* name : {"size", "shorter", "antialias"}) {
        if (AttrValue* v = FindOwnAttr(&resize->own, name)) attrs[name] = *v;
      }
    }
    fused.push_back(std::move(step));
    j = crop != nullptr ? crop_at : j + 1;
  }
  return fused;
}

absl::Status SampleStageKernel::InitSteps(const KernelInitContext& ctx) {
  steps_.clear();
  const std::string& op_type = ctx.op_type();
  if (op_type != "pipeline.chain") {
    // One operator, its attributes unprefixed.
    auto op = MakeSampleOp(op_type.substr(std::strlen("pipeline.")));
    if (!op.ok()) return op.status();
    auto op_index = ctx.IntAttrOr("op_index", 0);
    auto op_name = ctx.StringAttrOr("op_name", ctx.task_name());
    absl::Status ok = FirstError({op_index.status(), op_name.status()});
    if (ok.ok()) ok = (*op)->Init(ctx);
    if (!ok.ok()) return ok;
    steps_.push_back(Step{std::move(*op), *op_name, *op_index});
    return absl::OkStatus();
  }
  auto ops = ctx.StringListAttr("ops");
  auto names = ctx.StringListAttr("op_names");
  auto indices = ctx.IntListAttr("op_indices");
  absl::Status ok =
      FirstError({ops.status(), names.status(), indices.status()});
  if (!ok.ok()) return ok;
  if (ops->empty() || names->size() != ops->size() ||
      indices->size() != ops->size()) {
    return absl::InvalidArgumentError(
        "attrs 'ops', 'op_names' and 'op_indices': one entry per operator, "
        "at least one");
  }
  struct Planned {
    std::string op;
    TaskProto own;  // the operator's own attributes, unprefixed
    int64_t op_index;
  };
  std::vector<Planned> planned;
  for (size_t j = 0; j < ops->size(); ++j) {
    // Operator j's attributes are those named "<j>.<attr>".
    Planned p{(*ops)[j], TaskProto(), (*indices)[j]};
    p.own.set_name((*names)[j]);
    const std::string prefix = absl::StrCat(j, ".");
    for (const auto& [key, value] : TaskOf(ctx).kernel().attr()) {
      if (absl::StartsWith(key, prefix)) {
        (*p.own.mutable_kernel()->mutable_attr())[key.substr(prefix.size())] =
            value;
      }
    }
    planned.push_back(std::move(p));
  }
  auto fuse = ctx.BoolAttrOr("fuse_decode", false);
  if (!fuse.ok()) return fuse.status();
  if (*fuse) planned = FuseDecoders(std::move(planned));
  for (Planned& p : planned) {
    auto op = MakeSampleOp(p.op);
    if (!op.ok()) return op.status();
    KernelInitContext own_ctx = MakeInitContext(p.own, {}, {});
    ok = (*op)->Init(own_ctx);
    if (!ok.ok()) {
      return absl::Status(ok.code(), absl::StrCat("operator '", p.own.name(),
                                                  "': ", ok.message()));
    }
    steps_.push_back(Step{std::move(*op), p.own.name(), p.op_index});
  }
  return absl::OkStatus();
}

absl::Status SampleStageKernel::Init(const KernelInitContext& ctx) {
  auto input = ctx.StringAttr("input");
  auto output = ctx.StringAttr("output");
  auto worker = PositiveAttr(ctx, "worker", 0, 0);
  auto workers = PositiveAttr(ctx, "workers", 1, 1);
  auto seed = ctx.IntAttrOr("seed", 0);
  auto batch = PositiveAttr(ctx, "batch_size", 0, 1);
  auto skip = ctx.BoolAttrOr("skip_errors", false);
  auto deal = ctx.StringAttrOr("deal", "static");
  auto finish = ctx.BoolAttrOr("finish_in_batch", false);
  absl::Status ok =
      FirstError({input.status(), output.status(), worker.status(),
                  workers.status(), seed.status(), batch.status(),
                  skip.status(), deal.status(), finish.status()});
  if (ok.ok() && *deal != "static" && *deal != "dynamic" && *deal != "all") {
    ok = absl::InvalidArgumentError(
        absl::StrCat("attr 'deal': \"static\", \"dynamic\" or \"all\", got \"",
                     *deal, "\""));
  }
  if (ok.ok()) ok = ctx.ExpectInputs(1, 1);
  if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/true);
  if (ok.ok()) ok = InitSteps(ctx);
  if (ok.ok() && *finish &&
      (steps_.size() < 2 || !steps_.back().op->finishes_in_batch())) {
    ok = absl::InvalidArgumentError(absl::StrCat(
        "attr 'finish_in_batch': operator '", steps_.back().name,
        "' does not finish in a batch, or is the chain's only one"));
  }
  if (!ok.ok()) return ok;
  finish_in_batch_ = *finish;
  const KernelIo& in = ctx.inputs()[0];
  const bool has_input =
      std::any_of(in.blobs.begin(), in.blobs.end(),
                  [&](const BlobDesc& blob) { return blob.name == *input; });
  if (!has_input) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'input': regst_desc ", in.regst_desc_id,
                     " has no sample list '", *input, "'"));
  }
  input_ = *input;
  output_ = *output;
  worker_ = *worker;
  workers_ = *workers;
  seed_ = static_cast<uint64_t>(*seed);
  skip_errors_ = *skip;
  take_all_ = *deal == "all";
  dealer_ = *deal == "dynamic" && dealers_ != nullptr
                ? dealers_->For(steps_[0].op_index)
                : nullptr;
  return ctx.SetOutputBlobs("out", SampleListBlobs({output_}, *batch));
}

absl::Status SampleStageKernel::Apply(const SampleHeader& h, Sample* out) {
  // A file not yet read counts as the first step's to read: its failure is
  // a read failure, which skip_sample may drop.
  failed_step_ = 0;
  read_failed_ = false;
  auto input = Materialize(h, &file_);
  if (!input.ok()) {
    read_failed_ = true;
    return SampleError(steps_[0].name, h, input.status());
  }
  SampleRef current = *input;
  // A last operator the batch finishes is only checked here: it fails (or
  // skips) the sample here as it would have, and the batch then writes its
  // result straight into the sample's row.
  const size_t n = steps_.size() - (finish_in_batch_ ? 1 : 0);
  int written = 0;         // scratch buffers written so far
  Sample* held = nullptr;  // the one `current` is in (null: the input)
  for (size_t j = 0; j < n; ++j) {
    Step& step = steps_[j];
    // A last step that passes through still writes the slot from the
    // input itself (the slot must hold the sample), but from a scratch
    // buffer the buffer is handed over below.
    if ((j + 1 < n || held != nullptr) && step.op->PassesThrough(current)) {
      continue;
    }
    // Between operators the sample lives in this worker's two scratch
    // buffers, in turn (hot in cache, reused; never the one `current` is
    // in); the last writes the slot.
    Sample* target = j + 1 == n ? out : &scratch_[written++ % 2];
    SampleRng rng(seed_, static_cast<uint64_t>(step.op_index),
                  static_cast<uint64_t>(h.epoch),
                  static_cast<uint64_t>(h.position));
    absl::Status ok = step.op->Apply(current, &rng, target);
    if (!ok.ok()) {
      failed_step_ = j;
      return SampleError(step.name, h, ok);
    }
    current = target->ref();
    held = target;
  }
  if (finish_in_batch_) {
    if (auto shape = steps_[n].op->OutputShape(current); !shape.ok()) {
      failed_step_ = n;
      return SampleError(steps_[n].name, h, shape.status());
    }
  }
  if (held != out) {
    // The last steps passed the sample through: the scratch buffer goes to
    // the slot and the slot's to the scratch, rather than a copy; but a
    // buffer mostly empty is copied from, so that slots do not grow to
    // the chain's largest intermediate (a decoded image).
    if (held->bytes() * 2 >= static_cast<int64_t>(held->storage.capacity())) {
      std::swap(*out, *held);
    } else {
      out->Reshape(held->type, held->shape);
      std::memcpy(out->storage.data(), held->storage.data(), held->bytes());
    }
  }
  return absl::OkStatus();
}

absl::Status SampleStageKernel::Forward(KernelContext* ctx) {
  ConstRegisterView in = ctx->input(0);
  auto list = SampleListView::Of(in.blob(input_));
  auto chunk = ReadChunk(in);
  if (!list.ok()) return list.status();
  if (!chunk.ok()) return chunk.status();
  RegisterView out = ctx->output(0);
  SampleListWriter writer(out.blob(output_), &slots_);
  // The samples this worker takes: claimed (dynamic), all, or its share.
  int64_t i = -1;
  auto next = [&]() -> bool {
    if (dealer_ != nullptr) {
      i = dealer_->Claim(ctx->piece_id());
      return i < list->size();
    }
    while (++i < list->size()) {
      if (take_all_ || list->header(i).position % workers_ == worker_) {
        return true;
      }
    }
    return false;
  };
  while (next()) {
    const SampleHeader& h = list->header(i);
    SampleSlots::Slot* slot = writer.Next();
    const absl::string_view name = NameOf(h);
    slot->name.assign(name.data(), name.size());
    bool dropped = h.dropped != 0;
    absl::Status ok;
    if (dropped) {
      slot->sample.Reshape(DT_UINT8, {h.bytes});
      std::memcpy(slot->sample.storage.data(),
                  reinterpret_cast<const void*>(h.data), h.bytes);
    } else {
      ok = Apply(h, &slot->sample);
    }
    if (!ok.ok()) {
      if (!skip_errors_ ||
          !(read_failed_ || steps_[failed_step_].op->skippable())) {
        return ok;
      }
      FillDropped(ok, slot);
      dropped = true;
    }
    ok = writer.Commit(h, dropped);
    if (!ok.ok()) return ok;
  }
  absl::Status ok = writer.Finish(*ctx);
  if (!ok.ok()) return ok;
  return WriteChunk(out, *chunk);
}

namespace {
const bool kStagesRegistered = [] {
  for (const std::string& name : SampleOpNames()) {
    KernelRegistry::Get().Register("pipeline." + name, [] {
      return std::unique_ptr<Kernel>(new SampleStageKernel(nullptr));
    });
  }
  KernelRegistry::Get().Register("pipeline.chain", [] {
    return std::unique_ptr<Kernel>(new SampleStageKernel(nullptr));
  });
  return true;
}();
}  // namespace

}  // namespace actorflow::internal::pipeline
