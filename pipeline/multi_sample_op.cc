#include "pipeline/multi_sample_op.h"

#include "pipeline/bbox_crop.h"
#include "pipeline/box_encoder.h"
#include "pipeline/slice_at.h"

namespace actorflow::internal::pipeline {

std::unique_ptr<MultiSampleOp> MakeMultiSampleOp(const std::string& name) {
  if (name == "random_bbox_crop") return MakeRandomBboxCropOp();
  if (name == "box_encoder") return MakeBoxEncoderOp();
  if (name == "slice_at") return MakeSliceAtOp();
  if (name == "decode_slice") return MakeDecodeSliceOp();
  return nullptr;
}

std::map<std::string, std::vector<std::string>> MultiSampleOpAttrs() {
  return {{"random_bbox_crop", RandomBboxCropAttrs()},
          {"box_encoder", BoxEncoderAttrs()},
          {"slice_at", SliceAtAttrs()},
          {"decode_slice", DecodeSliceAttrs()}};
}

}  // namespace actorflow::internal::pipeline
