#include "examples/pipeline/image_pipeline_lib.h"

#include <cstring>

#include "plan/plan_builder.h"

namespace actorflow::internal::examples {
namespace {

// Order-sensitive over 8-byte words in four independent lanes (a pass at
// memory speed: a batch of 224 x 224 float images is 19 MB), then the
// tail bytes.
uint64_t Fnv(const void* data, int64_t bytes, uint64_t hash) {
  constexpr uint64_t kPrime = 1099511628211ULL;
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t lane[4] = {hash, hash ^ 1, hash ^ 2, hash ^ 3};
  int64_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    for (int k = 0; k < 4; ++k) {
      uint64_t word;
      std::memcpy(&word, p + i + 8 * k, 8);
      lane[k] = (lane[k] ^ word) * kPrime;
    }
  }
  for (int k = 0; k < 4; ++k) hash = (hash ^ lane[k]) * kPrime;
  for (; i < bytes; ++i) {
    hash ^= p[i];
    hash *= kPrime;
  }
  return hash;
}

}  // namespace

std::unique_ptr<Pipeline> MakeImagePipeline(const ImagePipelineConfig& config,
                                            PipelineOptions options) {
  auto pipe = std::make_unique<Pipeline>(std::move(options));
  pipe->Add(OperatorDef{
      .op = "file_reader",
      .name = "reader",
      .outputs = {"files", "labels"},
      .attrs = {{"dir", StringAttr(config.dir)},
                {"shuffle_window", IntAttr(config.shuffle_window)}}});
  pipe->Add(OperatorDef{.op = "decode",
                        .name = "decode",
                        .inputs = {"files"},
                        .outputs = {"decoded"},
                        .attrs = {{"color", StringAttr("rgb")},
                                  {"max_pixels", IntAttr(config.max_pixels)}}});
  std::string last = "decoded";
  if (config.resize > 0) {
    pipe->Add(OperatorDef{.op = "resize",
                          .name = "resize",
                          .inputs = {last},
                          .outputs = {"resized"},
                          .attrs = {{"shorter", IntAttr(config.resize)}}});
    last = "resized";
  }
  pipe->Add(
      OperatorDef{.op = "crop",
                  .name = "crop",
                  .inputs = {last},
                  .outputs = {"cropped"},
                  .attrs = {{"size", IntListAttr({config.crop, config.crop})},
                            {"random", BoolAttr(true)}}});
  pipe->Add(OperatorDef{.op = "flip",
                        .name = "flip",
                        .inputs = {"cropped"},
                        .outputs = {"flipped"},
                        .attrs = {{"horizontal", FloatAttr(0.5)}}});
  pipe->Add(
      OperatorDef{.op = "crop_mirror_normalize",
                  .name = "normalize",
                  .inputs = {"flipped"},
                  .outputs = {"images"},
                  .attrs = {{"mean", FloatListAttr({123.675, 116.28, 103.53})},
                            {"std", FloatListAttr({58.395, 57.12, 57.375})}}});
  pipe->SetOutputs({"images", "labels"});
  return pipe;
}

uint64_t HashBatch(const BatchView& batch, uint64_t hash) {
  for (const OutputView& out : batch.outputs) {
    hash = Fnv(out.data().raw_data(), out.data().byte_size(), hash);
    for (int64_t i = 0; i < out.num_samples(); ++i) {
      auto shape = out.sample_shape(i);
      hash = Fnv(shape.data(), static_cast<int64_t>(shape.size() * 8), hash);
    }
  }
  return hash;
}

}  // namespace actorflow::internal::examples
