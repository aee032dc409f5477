// pipeline.external_source: samples the program feeds.
#include <algorithm>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pipeline/stage_kernel_util.h"
#include "pipeline/stage_kernels.h"

namespace actorflow::internal::pipeline {

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
  ConstRegisterView shapes_in = ctx->input("shapes");
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
  RegisterView out = ctx->output(0);
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
  absl::Status ok = writer.Finish(*ctx);
  if (!ok.ok()) return ok;
  return WriteChunk(out, *chunk);
}

ACTORFLOW_REGISTER_KERNEL("pipeline.external_source", ExternalSourceKernel);

}  // namespace actorflow::internal::pipeline
