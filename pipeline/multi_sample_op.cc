#include "pipeline/multi_sample_op.h"

#include <functional>

#include "pipeline/bbox_crop.h"
#include "pipeline/box_encoder.h"
#include "pipeline/slice_at.h"

namespace actorflow::internal::pipeline {

namespace {

struct MultiOpEntry {
  std::function<std::unique_ptr<MultiSampleOp>()> make;
  std::vector<std::string> attrs;
};

// Every operator of several inputs or outputs, by name: one table for
// both what makes it and what it reads.
const std::map<std::string, MultiOpEntry>& MultiOps() {
  static const auto* ops = new std::map<std::string, MultiOpEntry>{
      {"random_bbox_crop", {MakeRandomBboxCropOp, RandomBboxCropAttrs()}},
      {"box_encoder", {MakeBoxEncoderOp, BoxEncoderAttrs()}},
      {"slice_at", {MakeSliceAtOp, SliceAtAttrs()}},
      {"decode_slice", {MakeDecodeSliceOp, DecodeSliceAttrs()}},
  };
  return *ops;
}

}  // namespace

std::unique_ptr<MultiSampleOp> MakeMultiSampleOp(const std::string& name) {
  auto it = MultiOps().find(name);
  return it == MultiOps().end() ? nullptr : it->second.make();
}

std::map<std::string, std::vector<std::string>> MultiSampleOpAttrs() {
  std::map<std::string, std::vector<std::string>> attrs;
  for (const auto& [name, op] : MultiOps()) attrs[name] = op.attrs;
  return attrs;
}

}  // namespace actorflow::internal::pipeline
