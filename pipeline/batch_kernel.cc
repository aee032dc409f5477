// pipeline.batch: samples assembled into batches.
#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/act_context.h"
#include "pipeline/stage_kernel_util.h"
#include "pipeline/stage_kernels.h"

namespace actorflow::internal::pipeline {

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
  auto lanes = ctx.IntAttrOr("lanes", 0);
  auto first_lane = ctx.IntAttrOr("first_lane", 0);
  auto positions = ctx.IntAttrOr("positions", 0);
  ok = FirstError({lanes.status(), first_lane.status(), positions.status()});
  if (!ok.ok()) return ok;
  elastic_ = *lanes > 0;
  if (elastic_ && (*first_lane < 0 || *first_lane + batch_size_ > *lanes ||
                   *positions < 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attrs 'lanes', 'first_lane', 'positions': lanes [", *first_lane, ", ",
        *first_lane + batch_size_, ") are not within ", *lanes, " lanes, or ",
        *positions, " positions is negative"));
  }
  lanes_ = LaneLayout{*lanes, *first_lane, batch_size_, *positions};
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
  ok = InitFinishing(ctx);
  if (!ok.ok()) return ok;
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

absl::Status BatchKernel::InitFinishing(const KernelInitContext& ctx) {
  auto ops = ctx.StringListAttr("finish_ops");
  auto names = ctx.StringListAttr("finish_op_names");
  auto indices = ctx.IntListAttr("finish_op_indices");
  auto seed = ctx.IntAttrOr("seed", 0);
  absl::Status ok = FirstError(
      {ops.status(), names.status(), indices.status(), seed.status()});
  if (!ok.ok()) return ok;
  if (ops->empty()) return absl::OkStatus();
  if (ops->size() != outputs_.size() || names->size() != outputs_.size() ||
      indices->size() != outputs_.size()) {
    return absl::InvalidArgumentError(
        "attrs 'finish_ops', 'finish_op_names' and 'finish_op_indices': one "
        "entry per output (\"\", 0 where none)");
  }
  seed_ = static_cast<uint64_t>(*seed);
  for (size_t k = 0; k < outputs_.size(); ++k) {
    if ((*ops)[k].empty()) continue;
    auto op = MakeSampleOp((*ops)[k]);
    if (op.ok() && !(*op)->finishes_in_batch()) {
      op = absl::InvalidArgumentError("it does not finish in a batch");
    }
    // Its attributes are those named "finish.<k>.<attr>".
    TaskProto own;
    own.set_name((*names)[k]);
    const std::string prefix = absl::StrCat("finish.", k, ".");
    for (const auto& [key, value] : TaskOf(ctx).kernel().attr()) {
      if (absl::StartsWith(key, prefix)) {
        (*own.mutable_kernel()->mutable_attr())[key.substr(prefix.size())] =
            value;
      }
    }
    if (op.ok()) ok = (*op)->Init(MakeInitContext(own, {}, {}));
    if (!op.ok() || !ok.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attr 'finish_ops': output '", outputs_[k].name, "': operator '",
          (*ops)[k], "': ", (op.ok() ? ok : op.status()).message()));
    }
    outputs_[k].finish = std::move(*op);
    outputs_[k].finish_name = (*names)[k];
    outputs_[k].finish_index = (*indices)[k];
  }
  return absl::OkStatus();
}

namespace {

// The sample's generator for output `finish_index`'s operator: its chain's.
SampleRng FinishRng(uint64_t seed, int64_t finish_index,
                    const SampleHeader& h) {
  return SampleRng(seed, static_cast<uint64_t>(finish_index),
                   static_cast<uint64_t>(h.epoch),
                   static_cast<uint64_t>(h.position));
}

}  // namespace

absl::Status BatchKernel::Finish(const Output& out, const SampleRef& sample,
                                 const SampleHeader& h, Sample* to,
                                 uint8_t* row) {
  SampleRng rng = FinishRng(seed_, out.finish_index, h);
  absl::Status ok = row != nullptr ? out.finish->ApplyInto(sample, &rng, row)
                                   : out.finish->Apply(sample, &rng, to);
  if (ok.ok()) return ok;
  return absl::Status(
      ok.code(),
      absl::StrCat("output '", out.name, "': operator '", out.finish_name,
                   "': ", DescribeSample(h), ": ", ok.message()));
}

absl::Status BatchKernel::PlaceFinished(const Output& out,
                                        const SampleRef& sample,
                                        const SampleHeader& h, TensorView data,
                                        TensorView shapes, int64_t row) {
  auto shape = out.finish->OutputShape(sample);
  if (shape.ok() && out.spec.max_shape ==
                        std::vector<int64_t>(shape->begin(), shape->end())) {
    // The sample fills its box: written there at once.
    int64_t* dims = static_cast<int64_t*>(shapes.mutable_raw_data()) +
                    row * static_cast<int64_t>(shape->size());
    std::copy(shape->begin(), shape->end(), dims);
    const int64_t box = ShapeElemCnt(*shape) * DataTypeSize(out.spec.type);
    return Finish(out, sample, h, nullptr,
                  static_cast<uint8_t*>(data.mutable_raw_data()) + row * box);
  }
  // Smaller than its box (or failing): made whole, then placed padded.
  absl::Status ok = Finish(out, sample, h, &finished_);
  if (!ok.ok()) return ok;
  return Place(out, finished_.ref(), DescribeSample(h), data, shapes, row);
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
  absl::Status ok = Assemble(ctx);
  ctx->ReportHeldBytes(HeldBytes());
  return ok;
}

int64_t BatchKernel::HeldBytes() const {
  int64_t bytes = static_cast<int64_t>(file_.storage.capacity());
  auto add = [&bytes](const Pending& sample) {
    for (const Sample& output : sample) {
      bytes += static_cast<int64_t>(output.storage.capacity());
    }
  };
  for (const Pending& sample : backlog_) add(sample);
  for (const std::deque<Waiting>& lane : lane_held_) {
    for (const Waiting& sample : lane) add(sample.outputs);
  }
  return bytes;
}

absl::Status BatchKernel::Assemble(KernelContext* ctx) {
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
  if (elastic_) return ForwardLanes(ctx, *chunk, samples);
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
        absl::Status ok =
            outputs_[k].finish != nullptr
                ? PlaceFinished(outputs_[k], *ref, h, data[k], shapes[k], row)
                : Place(outputs_[k], *ref, DescribeSample(h), data[k],
                        shapes[k], row);
        if (!ok.ok()) return ok;
      } else {
        if (k == 0) backlog_.emplace_back(n_out);
        auto ref = Materialize(h, &file_);
        if (!ref.ok()) return ref.status();
        absl::Status ok = Keep(outputs_[k], *ref, h, &backlog_.back()[k]);
        if (!ok.ok()) return ok;
      }
    }
    if (row < emit) ++row;
  }
  return SetRows(ctx, emit);
}

absl::Status BatchKernel::SetRows(KernelContext* ctx, int64_t rows) {
  for (const Output& out : outputs_) {
    std::vector<int64_t> dims = {rows};
    dims.insert(dims.end(), out.spec.max_shape.begin(),
                out.spec.max_shape.end());
    absl::Status ok = ctx->output("out_" + out.name).blob(0).set_shape(dims);
    const int64_t shape_dims[] = {
        rows, static_cast<int64_t>(out.spec.max_shape.size())};
    if (ok.ok()) {
      ok = ctx->output("shape_" + out.name).blob(0).set_shape(shape_dims);
    }
    if (!ok.ok()) return ok;
  }
  return absl::OkStatus();
}

absl::Status BatchKernel::Hold(const std::vector<const SampleHeader*>& sample,
                               Pending* held) {
  held->resize(outputs_.size());
  for (size_t k = 0; k < outputs_.size(); ++k) {
    auto ref = Materialize(*sample[k], &file_);
    if (!ref.ok()) {
      return absl::Status(ref.status().code(),
                          absl::StrCat("output '", outputs_[k].name,
                                       "': ", DescribeSample(*sample[k]), ": ",
                                       ref.status().message()));
    }
    absl::Status ok = Keep(outputs_[k], *ref, *sample[k], &(*held)[k]);
    if (!ok.ok()) return ok;
  }
  return absl::OkStatus();
}

absl::Status BatchKernel::Keep(const Output& out, const SampleRef& sample,
                               const SampleHeader& h, Sample* held) {
  if (out.finish != nullptr) return Finish(out, sample, h, held);
  held->Reshape(sample.type, sample.shape);
  std::memcpy(held->storage.data(), sample.data, sample.bytes);
  return absl::OkStatus();
}

absl::Status BatchKernel::ForwardLanes(
    KernelContext* ctx, const ChunkInfo& chunk,
    const std::vector<std::vector<const SampleHeader*>>& samples) {
  const int64_t own = lanes_.own;
  if (chunk.epoch != lanes_epoch_) {
    lanes_epoch_ = chunk.epoch;
    lane_next_ = cursors_ != nullptr ? cursors_->For(chunk.epoch, own)
                                     : std::vector<int64_t>(own, 0);
    lane_held_.assign(own, {});
  }
  std::vector<const SampleHeader*> sample(outputs_.size());
  for (size_t s = 0; s < samples[0].size(); ++s) {
    const int64_t position = samples[0][s]->position;
    const int64_t lane = lanes_.LaneOf(position) - lanes_.first;
    if (lane < 0 || lane >= own) {
      return absl::InternalError(
          absl::StrCat("batch: position ", position, " of chunk ", chunk.chunk,
                       " is in none of lanes [", lanes_.first, ", ",
                       lanes_.first + own, ")"));
    }
    // Indices before the cursor went out (or were skipped) before a
    // restore: read again only because their chunk was.
    const int64_t index = lanes_.IndexInLane(position);
    if (index < lane_next_[lane]) continue;
    lane_next_[lane] = index + 1;
    const SampleHeader* dropped = nullptr;
    for (size_t k = 0; k < outputs_.size(); ++k) {
      sample[k] = samples[k][s];
      if (sample[k]->dropped && dropped == nullptr) dropped = sample[k];
    }
    if (dropped != nullptr) {
      if (log_ != nullptr) {
        const SampleRef text = RefOf(*dropped);
        log_->Add(SkippedSample{
            dropped->epoch, dropped->position, std::string(NameOf(*dropped)),
            std::string(reinterpret_cast<const char*>(text.data), text.bytes)});
      }
      continue;
    }
    lane_held_[lane].push_back(Waiting{{}, DescribeSample(*sample[0])});
    absl::Status held = Hold(sample, &lane_held_[lane].back().outputs);
    if (!held.ok()) return held;
  }
  // Chunk c brings index c of every lane: a lane whose last index came has
  // nothing more to wait for.
  bool ready = true;
  for (int64_t l = 0; l < own && ready; ++l) {
    ready = !lane_held_[l].empty() ||
            chunk.chunk >= lanes_.LaneLength(lanes_.first + l) - 1;
  }
  int64_t row = 0;
  for (int64_t l = 0; l < own && ready; ++l) {
    if (lane_held_[l].empty()) continue;
    for (size_t k = 0; k < outputs_.size(); ++k) {
      absl::Status ok =
          Place(outputs_[k], lane_held_[l].front().outputs[k].ref(),
                lane_held_[l].front().where,
                ctx->output("out_" + outputs_[k].name).blob(0),
                ctx->output("shape_" + outputs_[k].name).blob(0), row);
      if (!ok.ok()) return ok;
    }
    lane_held_[l].pop_front();
    ++row;
  }
  return SetRows(ctx, row);
}

absl::Status BatchKernel::SaveState(const KernelStateContext&,
                                    KernelState* state) {
  if (elastic_) {
    return absl::FailedPreconditionError(
        "batch: an elastic pipeline checkpoints its lanes' places, not the "
        "session (Pipeline::Checkpoint)");
  }
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

ACTORFLOW_REGISTER_KERNEL("pipeline.batch", BatchKernel);

}  // namespace actorflow::internal::pipeline
