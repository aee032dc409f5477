#include "pipeline/stage_kernels.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace actorflow::pipeline {
namespace {

absl::StatusOr<int64_t> PositiveAttr(const KernelInitContext& ctx,
                                     const char* name, int64_t fallback,
                                     int64_t min) {
  auto value = ctx.IntAttrOr(name, fallback);
  if (value.ok() && *value < min) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr '", name, "': at least ", min, ", got ", *value));
  }
  return value;
}

absl::Status FirstError(std::initializer_list<absl::Status> statuses) {
  for (const absl::Status& status : statuses) {
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// A sample's error, named by operator and sample.
absl::Status SampleError(const std::string& op, const SampleHeader& h,
                         const absl::Status& error) {
  return absl::Status(error.code(),
                      absl::StrCat("operator '", op, "': ", DescribeSample(h),
                                   ": ", error.message()));
}

}  // namespace

// ---- readers ----

absl::Status ReaderKernel::Init(const KernelInitContext& ctx) {
  auto outputs = ctx.StringListAttr("outputs");
  auto batch = PositiveAttr(ctx, "batch_size", 0, 1);
  auto shard = PositiveAttr(ctx, "shard_id", 0, 0);
  auto shards = PositiveAttr(ctx, "num_shards", 1, 1);
  auto window = PositiveAttr(ctx, "shuffle_window", 0, 0);
  auto limit = PositiveAttr(ctx, "limit", 0, 0);
  auto seed = ctx.IntAttrOr("seed", 0);
  auto skip = ctx.BoolAttrOr("skip_errors", false);
  absl::Status ok = FirstError(
      {outputs.status(), batch.status(), shard.status(), shards.status(),
       window.status(), limit.status(), seed.status(), skip.status()});
  if (ok.ok()) ok = ctx.ExpectInputs(1, 1);
  if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/true);
  if (!ok.ok()) return ok;
  if (outputs->empty() || outputs->size() > 2) {
    return absl::InvalidArgumentError(
        "attr 'outputs': one name (the data) or two (data, label)");
  }
  if (*shard >= *shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attr 'shard_id': ", *shard, " is not below num_shards ", *shards));
  }
  outputs_ = *outputs;
  batch_size_ = *batch;
  window_ = *window;
  seed_ = static_cast<uint64_t>(*seed);
  skip_errors_ = *skip;
  auto size = Open(ctx);
  if (!size.ok()) return size.status();
  ShardRange(*size, *shard, *shards, &begin_, &end_);
  if (*limit > 0) end_ = std::min(end_, begin_ + *limit);
  return ctx.SetOutputBlobs("out", SampleListBlobs(outputs_, batch_size_));
}

absl::Status ReaderKernel::Forward(KernelContext* ctx) {
  auto chunk = ReadChunk(ctx->input(0));
  if (!chunk.ok()) return chunk.status();
  if (chunk->epoch != order_epoch_) {
    order_ = EpochOrder(epoch_size(), window_, seed_, chunk->epoch);
    order_epoch_ = chunk->epoch;
  }
  RegstView out = ctx->output(0);
  const int64_t first = chunk->chunk * batch_size_;
  const int64_t last = std::min(epoch_size(), first + batch_size_);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    SampleListWriter writer(out.blob(outputs_[k]), &slots_);
    for (int64_t position = first; position < last; ++position) {
      SampleHeader like{};
      like.position = position;
      like.epoch = chunk->epoch;
      like.index = begin_ + order_[position];
      SampleSlots::Slot* slot = writer.Next();
      bool lazy = false;
      absl::Status filled = Fill(like.index, static_cast<int>(k), slot, &lazy);
      bool dropped = false;
      if (!filled.ok()) {
        like.name = reinterpret_cast<int64_t>(slot->name.data());
        like.name_len = static_cast<int64_t>(slot->name.size());
        filled = SampleError(ctx->task().name(), like, filled);
        if (!skip_errors_) return filled;
        FillDropped(filled, slot);
        dropped = true;
      }
      absl::Status committed = writer.Commit(like, dropped, lazy);
      if (!committed.ok()) return committed;
    }
    absl::Status finished = writer.Finish();
    if (!finished.ok()) return finished;
  }
  if (counter_ != nullptr) counter_->fetch_add(1, std::memory_order_relaxed);
  return WriteChunk(out, *chunk);
}

absl::StatusOr<int64_t> FileReaderKernel::Open(const KernelInitContext& ctx) {
  auto dir = ctx.StringAttrOr("dir", "");
  auto files = ctx.StringListAttr("files");
  auto labels = ctx.IntListAttr("labels");
  auto list = ctx.StringAttrOr("file_list", "");
  absl::Status ok = FirstError(
      {dir.status(), files.status(), labels.status(), list.status()});
  if (!ok.ok()) return ok;
  const int given = !dir->empty() + !files->empty() + !list->empty();
  if (given != 1) {
    return absl::InvalidArgumentError(
        "attrs: give exactly one of 'dir', 'files' and 'file_list'");
  }
  if (!dir->empty()) {
    auto listed = ListImageDirectory(*dir);
    if (!listed.ok()) {
      return absl::Status(
          listed.status().code(),
          absl::StrCat("attr 'dir': ", listed.status().message()));
    }
    files_ = std::move(*listed);
    if (files_.empty()) {
      return absl::NotFoundError(absl::StrCat(
          "attr 'dir': no .jpg, .jpeg or .png files under '", *dir, "'"));
    }
  } else if (!list->empty()) {
    auto listed = ReadFileList(*list);
    if (!listed.ok()) {
      return absl::Status(
          listed.status().code(),
          absl::StrCat("attr 'file_list': ", listed.status().message()));
    }
    files_ = std::move(*listed);
  } else {
    if (!labels->empty() && labels->size() != files->size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'labels': ", labels->size(), " labels for ",
                       files->size(), " files"));
    }
    for (size_t i = 0; i < files->size(); ++i) {
      files_.push_back(
          FileEntry{(*files)[i],
                    labels->empty() ? 0 : static_cast<int32_t>((*labels)[i])});
    }
  }
  return static_cast<int64_t>(files_.size());
}

absl::Status FileReaderKernel::Fill(int64_t index, int k,
                                    SampleSlots::Slot* slot, bool* lazy) {
  const FileEntry& file = files_[index];
  slot->name = file.path;
  if (k == 1) {
    slot->sample.Reshape(DT_INT32, {});
    *slot->sample.as<int32_t>() = file.label;
    return absl::OkStatus();
  }
  // Read by whichever worker takes the sample (see SampleHeader).
  slot->sample.Reshape(DT_UINT8, {0});
  *lazy = true;
  return absl::OkStatus();
}

absl::StatusOr<int64_t> IdxReaderKernel::Open(const KernelInitContext& ctx) {
  auto images = ctx.StringAttr("images");
  auto labels = ctx.StringAttrOr("labels", "");
  absl::Status ok = FirstError({images.status(), labels.status()});
  if (!ok.ok()) return ok;
  if (outputs().size() == 2 && labels->empty()) {
    return absl::InvalidArgumentError(
        "attr 'labels': required for a second output");
  }
  images_path_ = *images;
  labels_path_ = *labels;
  auto head = ReadIdxHeader(images_path_);
  if (!head.ok()) return head.status();
  if (head->size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'images': '", images_path_, "' holds ",
                     ShapeString(*head), ", not [count, rows, cols]"));
  }
  if (!labels_path_.empty()) {
    auto label_head = ReadIdxHeader(labels_path_);
    if (!label_head.ok()) return label_head.status();
    if (label_head->size() != 1 || (*label_head)[0] != (*head)[0]) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'labels': '", labels_path_, "' holds ",
                       ShapeString(*label_head),
                       ", not one label per image of ", ShapeString(*head)));
    }
  }
  return (*head)[0];
}

absl::Status IdxReaderKernel::Load() {
  auto images = ReadIdx(images_path_);
  if (!images.ok()) return images.status();
  images_ = std::move(*images);
  if (!labels_path_.empty()) {
    auto labels = ReadIdx(labels_path_);
    if (!labels.ok()) return labels.status();
    labels_ = std::move(*labels);
  }
  loaded_ = true;
  return absl::OkStatus();
}

absl::Status IdxReaderKernel::Fill(int64_t index, int k,
                                   SampleSlots::Slot* slot, bool*) {
  if (!loaded_) {
    absl::Status ok = Load();
    if (!ok.ok()) return ok;
  }
  slot->name =
      absl::StrCat(k == 0 ? images_path_ : labels_path_, "[", index, "]");
  if (k == 1) {
    slot->sample.Reshape(DT_INT32, {});
    *slot->sample.as<int32_t>() = labels_.data[index];
    return absl::OkStatus();
  }
  const int64_t rows = images_.dims[1];
  const int64_t cols = images_.dims[2];
  const int64_t shape[] = {rows, cols, 1};
  slot->sample.Reshape(DT_UINT8, shape);
  std::memcpy(slot->sample.storage.data(),
              images_.data.data() + index * rows * cols, rows * cols);
  return absl::OkStatus();
}

namespace {

// Copies the box `own` from the start of a dense array of shape `box` into
// a dense array of shape `own`: the innermost dimension row by row.
void CopyBox(const uint8_t* from, absl::Span<const int64_t> box,
             absl::Span<const int64_t> own, int64_t elem, uint8_t* to) {
  if (own.empty()) {
    std::memcpy(to, from, elem);
    return;
  }
  const int64_t rows = ShapeElemCnt(own.subspan(0, own.size() - 1));
  const int64_t row_bytes = own.back() * elem;
  if (rows == 0 || row_bytes == 0) return;
  std::vector<int64_t> index(own.size() - 1, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t offset = 0;  // in elements of `box`
    for (size_t k = 0; k < index.size(); ++k) {
      offset = offset * box[k] + index[k];
    }
    offset *= box.back();
    std::memcpy(to + r * row_bytes, from + offset * elem, row_bytes);
    for (size_t k = index.size(); k-- > 0;) {  // next index, odometer-wise
      if (++index[k] < own[k]) break;
      index[k] = 0;
    }
  }
}

}  // namespace

absl::Status ExternalSourceKernel::Init(const KernelInitContext& ctx) {
  auto outputs = ctx.StringListAttr("outputs");
  auto batch = PositiveAttr(ctx, "batch_size", 0, 1);
  absl::Status ok = FirstError({outputs.status(), batch.status()});
  if (!ok.ok()) return ok;
  if (outputs->size() != 1) {
    return absl::InvalidArgumentError("attr 'outputs': exactly one name");
  }
  const KernelIo* schedule = ctx.input("in");
  const KernelIo* data = ctx.input("data");
  const KernelIo* shapes = ctx.input("shapes");
  const size_t wanted = shapes == nullptr ? 2 : 3;
  if (schedule == nullptr || data == nullptr || ctx.inputs().size() != wanted ||
      data->blobs.size() != 1 || data->blobs[0].shape.empty()) {
    return absl::InvalidArgumentError(
        "consumed_regst_desc_id: wants 'in' (the schedule), 'data' (a "
        "register of one blob [batch, sample shape...]) and optionally "
        "'shapes' (int64 [batch, rank]: each sample's own shape)");
  }
  if (shapes != nullptr &&
      (shapes->blobs.size() != 1 || shapes->blobs[0].data_type != DT_INT64 ||
       shapes->blobs[0].shape.size() != 2 ||
       shapes->blobs[0].shape[1] !=
           static_cast<int64_t>(data->blobs[0].shape.size()) - 1)) {
    return absl::InvalidArgumentError(
        "consumed_regst_desc_id 'shapes': wants one int64 blob [batch, rank] "
        "with the rank of the data's samples");
  }
  output_ = (*outputs)[0];
  batch_size_ = *batch;
  return ctx.SetOutputBlobs("out", SampleListBlobs({output_}, batch_size_));
}

absl::Status ExternalSourceKernel::Forward(KernelContext* ctx) {
  auto chunk = ReadChunk(ctx->input("in"));
  if (!chunk.ok()) return chunk.status();
  ConstTensorView batch = ctx->input("data").blob(0);
  ConstRegstView shapes_in = ctx->input("shapes");
  const int64_t* shapes = nullptr;
  const absl::Span<const int64_t> box = batch.shape().subspan(1);
  const int64_t rank = static_cast<int64_t>(box.size());
  if (shapes_in.valid()) {
    ConstTensorView shape_blob = shapes_in.blob(0);
    if (shape_blob.shape().size() != 2 ||
        shape_blob.shape()[0] != batch.shape()[0]) {
      return absl::InvalidArgumentError(absl::StrCat(
          "the fed sample shapes ", ShapeString(shape_blob.shape()),
          " do not match the fed batch ", ShapeString(batch.shape())));
    }
    shapes = static_cast<const int64_t*>(shape_blob.raw_data());
  }
  RegstView out = ctx->output(0);
  SampleListWriter writer(out.blob(output_), &slots_);
  const int64_t elem = static_cast<int64_t>(DataTypeSize(batch.data_type()));
  const int64_t row_bytes = ShapeElemCnt(box) * elem;
  for (int64_t i = 0; i < batch.shape()[0]; ++i) {
    SampleSlots::Slot* slot = writer.Next();
    slot->name.clear();
    const uint8_t* row =
        static_cast<const uint8_t*>(batch.raw_data()) + i * row_bytes;
    if (shapes == nullptr) {
      slot->sample.Reshape(batch.data_type(), box);
      std::memcpy(slot->sample.storage.data(), row, row_bytes);
    } else {
      const absl::Span<const int64_t> own(shapes + i * rank, rank);
      for (int64_t k = 0; k < rank; ++k) {
        if (own[k] < 0 || own[k] > box[k]) {
          return absl::InvalidArgumentError(absl::StrCat(
              "sample ", i, " of the fed batch claims shape ", ShapeString(own),
              ", outside its box ", ShapeString(box)));
        }
      }
      slot->sample.Reshape(batch.data_type(), own);
      CopyBox(row, box, own, elem, slot->sample.storage.data());
    }
    SampleHeader like{};
    like.epoch = chunk->epoch;
    like.position = chunk->chunk * batch_size_ + i;
    like.index = like.position;
    absl::Status ok = writer.Commit(like, false);
    if (!ok.ok()) return ok;
  }
  absl::Status ok = writer.Finish();
  if (!ok.ok()) return ok;
  return WriteChunk(out, *chunk);
}

// ---- per-sample stages ----

namespace {

AttrValue* FindOwnAttr(TaskProto* task, const std::string& name) {
  auto& attrs = *task->mutable_kernel()->mutable_attr();
  auto it = attrs.find(name);
  return it == attrs.end() ? nullptr : &it->second;
}

}  // namespace

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
    Planned* resize = planned[j + 1].op == "resize" ? &planned[j + 1] : nullptr;
    const size_t crop_at = j + (resize ? 2 : 1);
    Planned* crop = crop_at < planned.size() && planned[crop_at].op == "crop"
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
      for (const char* name : {"size", "random"}) {
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
      }
    } else {
      step.op = "decode_resize";
      for (const char* name : {"size", "shorter"}) {
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
  const std::string& op_type = ctx.task().kernel().op_type();
  if (op_type != "pipeline.chain") {
    // One operator, its attributes unprefixed.
    auto op = MakeSampleOp(op_type.substr(std::strlen("pipeline.")));
    if (!op.ok()) return op.status();
    auto op_index = ctx.IntAttrOr("op_index", 0);
    auto op_name = ctx.StringAttrOr("op_name", ctx.task().name());
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
    for (const auto& [key, value] : ctx.task().kernel().attr()) {
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
    KernelInitContext own_ctx(p.own, {}, {});
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
  absl::Status ok = FirstError(
      {input.status(), output.status(), worker.status(), workers.status(),
       seed.status(), batch.status(), skip.status(), deal.status()});
  if (ok.ok() && *deal != "static" && *deal != "dynamic" && *deal != "all") {
    ok = absl::InvalidArgumentError(
        absl::StrCat("attr 'deal': \"static\", \"dynamic\" or \"all\", got \"",
                     *deal, "\""));
  }
  if (ok.ok()) ok = ctx.ExpectInputs(1, 1);
  if (ok.ok()) ok = ctx.ExpectOutput(/*required=*/true);
  if (ok.ok()) ok = InitSteps(ctx);
  if (!ok.ok()) return ok;
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
  const size_t n = steps_.size();
  for (size_t j = 0; j < n; ++j) {
    Step& step = steps_[j];
    // Between operators the sample lives in this worker's two scratch
    // buffers, in turn (hot in cache, reused); the last writes the slot.
    Sample* target = j + 1 == n ? out : &scratch_[j % 2];
    SampleRng rng(seed_, static_cast<uint64_t>(step.op_index),
                  static_cast<uint64_t>(h.epoch),
                  static_cast<uint64_t>(h.position));
    absl::Status ok = step.op->Apply(current, &rng, target);
    if (!ok.ok()) {
      failed_step_ = j;
      return SampleError(step.name, h, ok);
    }
    current = target->ref();
  }
  return absl::OkStatus();
}

absl::Status SampleStageKernel::Forward(KernelContext* ctx) {
  ConstRegstView in = ctx->input(0);
  auto list = SampleListView::Of(in.blob(input_));
  auto chunk = ReadChunk(in);
  if (!list.ok()) return list.status();
  if (!chunk.ok()) return chunk.status();
  RegstView out = ctx->output(0);
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
  absl::Status ok = writer.Finish();
  if (!ok.ok()) return ok;
  return WriteChunk(out, *chunk);
}

// ---- batch assembly ----

absl::Status BatchKernel::Init(const KernelInitContext& ctx) {
  auto names = ctx.StringListAttr("outputs");
  auto counts = ctx.IntListAttr("inputs_per_output");
  auto index = ctx.IntListAttr("input_index");
  auto types = ctx.StringListAttr("types");
  auto ranks = ctx.IntListAttr("ranks");
  auto shapes = ctx.IntListAttr("max_shapes");
  auto batch = PositiveAttr(ctx, "batch_size", 0, 1);
  absl::Status ok = FirstError({names.status(), counts.status(), index.status(),
                                types.status(), ranks.status(), shapes.status(),
                                batch.status()});
  if (!ok.ok()) return ok;
  const size_t n = names->size();
  if (n == 0 || counts->size() != n || types->size() != n ||
      ranks->size() != n) {
    return absl::InvalidArgumentError(
        "attrs 'outputs', 'inputs_per_output', 'types' and 'ranks': one "
        "entry per output, at least one output");
  }
  batch_size_ = *batch;
  outputs_.clear();
  size_t next_index = 0;
  size_t next_dim = 0;
  const int64_t registers = static_cast<int64_t>(ctx.inputs().size());
  for (size_t k = 0; k < n; ++k) {
    Output out;
    out.name = (*names)[k];
    auto type = ParseDataType((*types)[k]);
    if (!type.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'types': ", type.status().message()));
    }
    out.spec.type = *type;
    const int64_t rank = (*ranks)[k];
    if (rank < 0 || rank > kMaxRank || next_dim + rank > shapes->size()) {
      return absl::InvalidArgumentError(
          "attrs 'ranks' and 'max_shapes': the ranks (0 to 4) must add up "
          "to the number of dimensions listed");
    }
    out.spec.max_shape.assign(shapes->begin() + next_dim,
                              shapes->begin() + next_dim + rank);
    next_dim += rank;
    if (!out.spec.bounded()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "output '", out.name, "': samples of ",
          ShapeString(out.spec.max_shape), " have no bound to batch them to"));
    }
    for (int64_t c = 0; c < (*counts)[k]; ++c, ++next_index) {
      if (next_index >= index->size() || (*index)[next_index] < 0 ||
          (*index)[next_index] >= registers) {
        return absl::InvalidArgumentError(
            absl::StrCat("attr 'input_index': wants ", (*counts)[k],
                         " register indices below ", registers, " for output '",
                         out.name, "'"));
      }
      out.inputs.push_back(static_cast<int>((*index)[next_index]));
    }
    outputs_.push_back(std::move(out));
  }
  if (next_dim != shapes->size()) {
    return absl::InvalidArgumentError(
        "attr 'max_shapes': more dimensions than 'ranks' account for");
  }
  if (next_index != index->size()) {
    return absl::InvalidArgumentError(
        "attr 'input_index': more entries than 'inputs_per_output' adds up to");
  }
  for (const Output& out : outputs_) {
    std::vector<int64_t> dims = {batch_size_};
    dims.insert(dims.end(), out.spec.max_shape.begin(),
                out.spec.max_shape.end());
    ok = ctx.SetOutputBlobs("out_" + out.name,
                            {BlobDesc{out.name, out.spec.type, dims, true}});
    if (!ok.ok()) return ok;
    ok = ctx.SetOutputBlobs(
        "shape_" + out.name,
        {BlobDesc{
            "shape",
            DT_INT64,
            {batch_size_, static_cast<int64_t>(out.spec.max_shape.size())},
            true}});
    if (!ok.ok()) return ok;
  }
  return absl::OkStatus();
}

absl::Status BatchKernel::Place(const Output& out, const SampleRef& sample,
                                const std::string& where, TensorView data,
                                TensorView shapes, int64_t row) const {
  const std::vector<int64_t>& max = out.spec.max_shape;
  bool fits = sample.type == out.spec.type && sample.shape.size() == max.size();
  for (size_t d = 0; fits && d < max.size(); ++d) {
    fits = sample.shape[d] <= max[d];
  }
  if (!fits) {
    return absl::InvalidArgumentError(absl::StrCat(
        "output '", out.name, "': ", where, " is ", DataTypeName(sample.type),
        " ", ShapeString(sample.shape), ", which does not fit the batch's ",
        DataTypeName(out.spec.type), " ", ShapeString(max)));
  }
  const int64_t elem = DataTypeSize(out.spec.type);
  const int64_t box = ShapeElemCnt(max) * elem;
  uint8_t* dst = static_cast<uint8_t*>(data.mutable_raw_data()) + row * box;
  int64_t* dims = static_cast<int64_t*>(shapes.mutable_raw_data()) +
                  row * static_cast<int64_t>(max.size());
  for (size_t d = 0; d < max.size(); ++d) dims[d] = sample.shape[d];
  if (sample.bytes == box) {
    std::memcpy(dst, sample.data, box);
    return absl::OkStatus();
  }
  // Padded: zero the box, then copy each innermost row to its place.
  std::memset(dst, 0, box);
  const size_t rank = max.size();
  if (rank == 0 || ShapeElemCnt(sample.shape) == 0) return absl::OkStatus();
  const int64_t row_bytes = sample.shape[rank - 1] * elem;
  const int64_t rows = ShapeElemCnt(sample.shape) / sample.shape[rank - 1];
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rest = r, offset = 0, stride = max[rank - 1];
    for (size_t d = rank - 1; d-- > 0;) {
      offset += (rest % sample.shape[d]) * stride;
      rest /= sample.shape[d];
      stride *= max[d];
    }
    std::memcpy(dst + offset * elem, sample.data + r * row_bytes, row_bytes);
  }
  return absl::OkStatus();
}

absl::Status BatchKernel::Forward(KernelContext* ctx) {
  auto chunk = ReadChunk(ctx->input(0));
  if (!chunk.ok()) return chunk.status();
  if (chunk->epoch != backlog_epoch_) {
    backlog_.clear();
    backlog_epoch_ = chunk->epoch;
  }
  // Each output's samples of this chunk, in epoch order.
  const size_t n_out = outputs_.size();
  std::vector<std::vector<const SampleHeader*>> samples(n_out);
  for (size_t k = 0; k < n_out; ++k) {
    const Output& out = outputs_[k];
    for (int input : out.inputs) {
      auto list = SampleListView::Of(ctx->input(input).blob(out.name));
      if (!list.ok()) return list.status();
      for (int64_t s = 0; s < list->size(); ++s) {
        samples[k].push_back(&list->header(s));
      }
    }
    std::sort(samples[k].begin(), samples[k].end(),
              [](const SampleHeader* a, const SampleHeader* b) {
                return a->position < b->position;
              });
    if (samples[k].size() != samples[0].size()) {
      return absl::InternalError(
          absl::StrCat("batch: output '", out.name, "' has ", samples[k].size(),
                       " samples in chunk ", chunk->chunk, ", output '",
                       outputs_[0].name, "' ", samples[0].size()));
    }
  }
  // Positions every output kept; the others are dropped (and logged once).
  std::vector<size_t> kept;
  for (size_t s = 0; s < samples[0].size(); ++s) {
    const SampleHeader* dropped = nullptr;
    for (size_t k = 0; k < n_out && dropped == nullptr; ++k) {
      if (samples[k][s]->dropped) dropped = samples[k][s];
    }
    if (dropped == nullptr) {
      kept.push_back(s);
    } else if (log_ != nullptr) {
      const SampleRef text = RefOf(*dropped);
      log_->Add(SkippedSample{
          dropped->epoch, dropped->position, std::string(NameOf(*dropped)),
          std::string(reinterpret_cast<const char*>(text.data), text.bytes)});
    }
  }
  const int64_t available = static_cast<int64_t>(backlog_.size() + kept.size());
  const int64_t emit = available >= batch_size_ ? batch_size_
                       : chunk->final           ? available
                                                : 0;
  std::vector<TensorView> data(n_out), shapes(n_out);
  for (size_t k = 0; k < n_out; ++k) {
    data[k] = ctx->output("out_" + outputs_[k].name).blob(0);
    shapes[k] = ctx->output("shape_" + outputs_[k].name).blob(0);
  }
  int64_t row = 0;
  while (row < emit && !backlog_.empty()) {
    for (size_t k = 0; k < n_out; ++k) {
      absl::Status ok = Place(outputs_[k], backlog_.front()[k].ref(),
                              "a held-over sample", data[k], shapes[k], row);
      if (!ok.ok()) return ok;
    }
    backlog_.pop_front();
    ++row;
  }
  for (size_t s : kept) {
    for (size_t k = 0; k < n_out; ++k) {
      const SampleHeader& h = *samples[k][s];
      if (row < emit) {
        auto ref = Materialize(h, &file_);
        if (!ref.ok()) {
          return absl::Status(ref.status().code(),
                              absl::StrCat("output '", outputs_[k].name,
                                           "': ", DescribeSample(h), ": ",
                                           ref.status().message()));
        }
        absl::Status ok = Place(outputs_[k], *ref, DescribeSample(h), data[k],
                                shapes[k], row);
        if (!ok.ok()) return ok;
      } else {
        if (k == 0) backlog_.emplace_back(n_out);
        Sample& held = backlog_.back()[k];
        auto ref = Materialize(h, &file_);
        if (!ref.ok()) return ref.status();
        held.Reshape(ref->type, ref->shape);
        std::memcpy(held.storage.data(), ref->data, ref->bytes);
      }
    }
    if (row < emit) ++row;
  }
  for (size_t k = 0; k < n_out; ++k) {
    std::vector<int64_t> dims = {emit};
    dims.insert(dims.end(), outputs_[k].spec.max_shape.begin(),
                outputs_[k].spec.max_shape.end());
    absl::Status ok = data[k].set_shape(dims);
    const int64_t shape_dims[] = {
        emit, static_cast<int64_t>(outputs_[k].spec.max_shape.size())};
    if (ok.ok()) ok = shapes[k].set_shape(shape_dims);
    if (!ok.ok()) return ok;
  }
  return absl::OkStatus();
}

absl::Status BatchKernel::SaveState(const KernelStateContext&,
                                    KernelState* state) {
  state->AddScalar<int64_t>("backlog_epoch", backlog_epoch_);
  state->AddScalar<int64_t>("held", static_cast<int64_t>(backlog_.size()));
  for (size_t i = 0; i < backlog_.size(); ++i) {
    for (size_t k = 0; k < backlog_[i].size(); ++k) {
      const Sample& sample = backlog_[i][k];
      state->Add(absl::StrCat("held.", i, ".", k), sample.type,
                 std::vector<int64_t>(sample.shape.begin(), sample.shape.end()),
                 sample.storage.data());
    }
  }
  return absl::OkStatus();
}

absl::Status BatchKernel::RestoreState(const KernelStateContext&,
                                       const KernelState& state) {
  auto epoch = state.Scalar<int64_t>("backlog_epoch");
  if (!epoch.ok()) return epoch.status();
  auto held = state.Scalar<int64_t>("held");
  if (!held.ok()) return held.status();
  if (*held < 0 || *held > batch_size_) {
    return absl::InvalidArgumentError(
        absl::StrCat("state 'held': ", *held,
                     " samples held over, outside [0, ", batch_size_, "]"));
  }
  std::deque<Pending> backlog;
  for (int64_t i = 0; i < *held; ++i) {
    Pending pending(outputs_.size());
    for (size_t k = 0; k < outputs_.size(); ++k) {
      const std::string name = absl::StrCat("held.", i, ".", k);
      const StateEntry* entry = state.Find(name);
      if (entry == nullptr) {
        return absl::NotFoundError(
            absl::StrCat("state '", name, "' is missing"));
      }
      pending[k].Reshape(entry->data_type, entry->shape);
      std::memcpy(pending[k].storage.data(), entry->bytes.data(),
                  entry->bytes.size());
    }
    backlog.push_back(std::move(pending));
  }
  backlog_epoch_ = *epoch;
  backlog_ = std::move(backlog);
  return absl::OkStatus();
}

// ---- registrations ----

ACTORFLOW_REGISTER_KERNEL("pipeline.file_reader", FileReaderKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.idx_reader", IdxReaderKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.batch", BatchKernel);
ACTORFLOW_REGISTER_KERNEL("pipeline.external_source", ExternalSourceKernel);

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

}  // namespace actorflow::pipeline
