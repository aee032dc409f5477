// The data pipeline end to end on real files: Fashion-MNIST's IDX files and
// JPEG/PNG images written from them. Checks batches against the data read
// directly, determinism across thread counts and prefetch depths, the
// prefetch bound, failures, skip_sample, epochs, zero-copy outputs and
// external input.
#include "actorflow/pipeline.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <numeric>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/plan_validator.h"
#include "examples/pipeline/image_pipeline_lib.h"
#include "pipeline/dataset.h"
#include "pipeline/fixtures.h"
#include "pipeline/image_ops.h"
#include "pipeline/sample_function.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

namespace fs = std::filesystem;

// A directory of `count` images of `size` px (and `corrupt` broken files),
// written once per test binary and name.
std::string ImageDir(const std::string& name, int count, int size,
                     int corrupt) {
  const std::string dir = testing::TestTempDir(name);
  REQUIRE(WriteFashionImages(dir, count, size, corrupt).ok());
  return dir;
}

const std::string kTestImages =
    FashionMnistDir() + "/t10k-images-idx3-ubyte.gz";
const std::string kTestLabels =
    FashionMnistDir() + "/t10k-labels-idx1-ubyte.gz";

std::unique_ptr<Pipeline> IdxPipeline(PipelineOptions options,
                                      int64_t window = 0) {
  auto pipe = std::make_unique<Pipeline>(std::move(options));
  pipe->Add(OperatorDef{.op = "idx_reader",
                        .name = "reader",
                        .outputs = {"images", "labels"},
                        .attrs = {{"images", StringAttr(kTestImages)},
                                  {"labels", StringAttr(kTestLabels)},
                                  {"shuffle_window", IntAttr(window)}}});
  pipe->SetOutputs({"images", "labels"});
  return pipe;
}

// The test set's first `limit` images and labels.
OperatorDef FirstTestImages(int64_t limit) {
  return OperatorDef{.op = "idx_reader",
                     .outputs = {"images", "labels"},
                     .attrs = {{"images", StringAttr(kTestImages)},
                               {"labels", StringAttr(kTestLabels)},
                               {"limit", IntAttr(limit)}}};
}

// The first `limit` test images ("images", the reader's) and each mirrored
// ("flipped", a stage's), batch_size per batch on `threads` workers.
std::unique_ptr<Pipeline> ImagesAndFlipped(int64_t limit, int64_t batch_size,
                                           int threads) {
  PipelineOptions options;
  options.batch_size = batch_size;
  options.num_threads = threads;
  auto pipe = std::make_unique<Pipeline>(options);
  pipe->Add(FirstTestImages(limit));
  pipe->Add(OperatorDef{.op = "flip",
                        .inputs = {"images"},
                        .outputs = {"flipped"},
                        .attrs = {{"horizontal", FloatAttr(1.0)}}});
  return pipe;
}

// Builds `pipe` and runs it to its end a batch at a time, `check` seeing
// each batch.
void EachBatch(Pipeline& pipe,
               const std::function<void(const BatchView&)>& check) {
  REQUIRE_OK(pipe.Build());
  REQUIRE(pipe.Run().ok());
  while (true) {
    auto out = pipe.Outputs();
    if (absl::IsOutOfRange(out.status())) break;
    REQUIRE(out.ok());
    check(*out);
    REQUIRE(pipe.Run().ok());
  }
}

// Image i of an IDX array of 28 x 28 images, as a sample.
Sample IdxImage(const IdxArray& images, int64_t i) {
  Sample image;
  image.Reshape(DT_UINT8, {28, 28, 1});
  std::memcpy(image.storage.data(), images.data.data() + i * 784, 784);
  return image;
}

// Every batch of one epoch, hashed in order; Run()s `depth` ahead.
uint64_t EpochHash(Pipeline* pipe, int depth, int64_t* images = nullptr,
                   int64_t* batches = nullptr) {
  uint64_t hash = examples::kHashSeed;
  for (int i = 0; i < depth; ++i) REQUIRE(pipe->Run().ok());
  int64_t n = 0, b = 0;
  while (true) {
    auto out = pipe->Outputs();
    if (absl::IsOutOfRange(out.status())) break;
    INFO(out.status().message());
    REQUIRE(out.ok());
    hash = examples::HashBatch(*out, hash);
    n += out->outputs[0].num_samples();
    ++b;
    REQUIRE(pipe->Run().ok());
  }
  if (images) *images = n;
  if (batches) *batches = b;
  return hash;
}

TEST_CASE("an IDX pipeline hands out Fashion-MNIST exactly, batch by batch") {
  auto raw_images = ReadIdx(kTestImages);
  auto raw_labels = ReadIdx(kTestLabels);
  REQUIRE(raw_images.ok());
  REQUIRE(raw_labels.ok());
  PipelineOptions options;
  options.batch_size = 96;  // 10000 = 104 * 96 + 16: a short last batch
  options.num_threads = 2;
  auto pipe = IdxPipeline(options);
  REQUIRE_OK(pipe->Build());
  CHECK(pipe->epoch_size() == 10000);
  for (int i = 0; i < 2; ++i) REQUIRE(pipe->Run().ok());
  int64_t seen = 0;
  int batches = 0;
  while (true) {
    auto out = pipe->Outputs();
    if (absl::IsOutOfRange(out.status())) {
      CHECK_THAT(std::string(out.status().message()),
                 Catch::Contains("end of epoch 0: 105 batches"));
      break;
    }
    REQUIRE(out.ok());
    auto images = out->output("images");
    auto labels = out->output("labels");
    REQUIRE(images.ok());
    REQUIRE(labels.ok());
    const int64_t n = images->num_samples();
    CHECK(n == (batches < 104 ? 96 : 16));
    CHECK(images->data().shape() == absl::Span<const int64_t>({n, 28, 28, 1}));
    CHECK(labels->data().data_type() == DT_INT32);
    CHECK(std::memcmp(images->data().raw_data(),
                      raw_images->data.data() + seen * 784, n * 784) == 0);
    auto label_values = labels->data().data<int32_t>();
    REQUIRE(label_values.ok());
    for (int64_t i = 0; i < n; ++i) {
      REQUIRE((*label_values)[i] == raw_labels->data[seen + i]);
    }
    CHECK(images->sample_shape(0) == absl::Span<const int64_t>({28, 28, 1}));
    seen += n;
    ++batches;
    REQUIRE(pipe->Run().ok());
  }
  CHECK(seen == 10000);
  CHECK(batches == 105);
  // The epoch is over until Reset; then it starts again from sample 0.
  REQUIRE(pipe->Run().ok());
  CHECK(absl::IsOutOfRange(pipe->Outputs().status()));
  REQUIRE(pipe->Reset().ok());
  CHECK(pipe->epoch() == 1);
  REQUIRE(pipe->Run().ok());
  auto again = pipe->Outputs();
  REQUIRE(again.ok());
  CHECK(again->epoch == 1);
  CHECK(again->index == 0);
  CHECK(std::memcmp(again->outputs[0].data().raw_data(),
                    raw_images->data.data(), 96 * 784) == 0);
}

TEST_CASE("a crop to the whole image passes through a chain unchanged") {
  // resize 20 x 20, crop 20 x 20 (the whole image: no copy), flip, crop
  // the centre 10 x 10: the chain's scratch buffers stay apart across the
  // step that passes through.
  auto raw = ReadIdx(kTestImages);
  REQUIRE(raw.ok());
  PipelineOptions options;
  options.batch_size = 4;
  options.num_threads = 1;
  Pipeline pipe(options);
  pipe.Add(FirstTestImages(4));
  pipe.Add(OperatorDef{.op = "resize",
                       .inputs = {"images"},
                       .outputs = {"small"},
                       .attrs = {{"size", IntListAttr({20, 20})}}});
  pipe.Add(OperatorDef{.op = "crop",
                       .inputs = {"small"},
                       .outputs = {"whole"},
                       .attrs = {{"size", IntListAttr({20, 20})}}});
  pipe.Add(OperatorDef{.op = "flip",
                       .inputs = {"whole"},
                       .outputs = {"flipped"},
                       .attrs = {{"horizontal", FloatAttr(1.0)}}});
  pipe.Add(OperatorDef{.op = "crop",
                       .inputs = {"flipped"},
                       .outputs = {"centre"},
                       .attrs = {{"size", IntListAttr({10, 10})}}});
  pipe.SetOutputs({"centre"});
  REQUIRE_OK(pipe.Build());
  REQUIRE(pipe.Run().ok());
  auto out = pipe.Outputs();
  REQUIRE(out.ok());
  const auto images = out->outputs[0].data();
  REQUIRE(images.shape() == absl::Span<const int64_t>({4, 10, 10, 1}));
  for (int64_t i = 0; i < 4; ++i) {
    Sample small, flipped, want;
    REQUIRE_OK(Resize(IdxImage(*raw, i).ref(), 20, 20, &small));
    REQUIRE_OK(Flip(small.ref(), true, false, &flipped));
    REQUIRE_OK(Crop(flipped.ref(), CropWindow{5, 5}, 10, 10, &want));
    INFO("sample " << i);
    CHECK(std::memcmp(static_cast<const uint8_t*>(images.raw_data()) + i * 100,
                      want.storage.data(), 100) == 0);
  }
  CHECK(pipe.Finish().ok());
}

TEST_CASE("arith combines two per-sample nodes of the same samples") {
  // small = resize 20 x 20; diff = small - flip(small); twice = flip(small
  // + small), both ways. Two workers, so each pairs the samples its own
  // stages took.
  auto raw = ReadIdx(kTestImages);
  REQUIRE(raw.ok());
  PipelineOptions options;
  options.batch_size = 8;
  options.num_threads = 2;
  Pipeline pipe(options);
  pipe.Add(FirstTestImages(16));
  pipe.Add(OperatorDef{.op = "resize",
                       .inputs = {"images"},
                       .outputs = {"small"},
                       .attrs = {{"size", IntListAttr({20, 20})}}});
  pipe.Add(OperatorDef{.op = "flip",
                       .inputs = {"small"},
                       .outputs = {"flipped"},
                       .attrs = {{"horizontal", FloatAttr(1.0)}}});
  pipe.Add(OperatorDef{.op = "arith",
                       .inputs = {"small", "flipped"},
                       .outputs = {"diff"},
                       .attrs = {{"op", StringAttr("sub")}}});
  pipe.Add(OperatorDef{.op = "arith",
                       .inputs = {"small", "small"},
                       .outputs = {"doubled"},
                       .attrs = {{"op", StringAttr("add")}}});
  // An operator after arith (its own stages: arith is no chain).
  pipe.Add(OperatorDef{
      .op = "flip",
      .inputs = {"doubled"},
      .outputs = {"twice"},
      .attrs = {{"vertical", FloatAttr(1.0)}, {"horizontal", FloatAttr(1.0)}}});
  pipe.SetOutputs({"diff", "twice"});
  int64_t seen = 0;
  EachBatch(pipe, [&](const BatchView& out) {
    auto diff = out.outputs[0].data().data<float>();
    auto twice = out.outputs[1].data().data<float>();
    REQUIRE(diff.ok());
    REQUIRE(twice.ok());
    for (int64_t i = 0; i < out.outputs[0].num_samples(); ++i, ++seen) {
      Sample small, flipped;
      REQUIRE_OK(Resize(IdxImage(*raw, seen).ref(), 20, 20, &small));
      REQUIRE_OK(Flip(small.ref(), true, false, &flipped));
      INFO("sample " << seen);
      for (int64_t k = 0; k < 400; ++k) {
        REQUIRE((*diff)[i * 400 + k] ==
                static_cast<float>(small.storage[k]) -
                    static_cast<float>(flipped.storage[k]));
        // twice: small doubled, turned half round (flipped both ways).
        REQUIRE((*twice)[i * 400 + 399 - k] == 2.0f * small.storage[k]);
      }
    }
  });
  CHECK(seen == 16);
  CHECK(pipe.Finish().ok());

  // An unknown op is named.
  Pipeline wrong(options);
  wrong.Add(OperatorDef{.op = "idx_reader",
                        .outputs = {"images", "labels"},
                        .attrs = {{"images", StringAttr(kTestImages)},
                                  {"labels", StringAttr(kTestLabels)}}});
  wrong.Add(OperatorDef{.op = "arith",
                        .name = "modulo",
                        .inputs = {"images", "images"},
                        .outputs = {"modulo"},
                        .attrs = {{"op", StringAttr("mod")}}});
  wrong.SetOutputs({"modulo"});
  CHECK_THAT(std::string(wrong.Build().message()),
             Catch::Contains("operator 'modulo' (arith): attr 'op': \"add\""));
}

TEST_CASE("arith takes the reader's samples too, each worker its own") {
  // images (the reader's) + small (a stage's): the arith stage takes from
  // the reader's register the positions its worker's stages took.
  auto raw = ReadIdx(kTestImages);
  REQUIRE(raw.ok());
  for (int threads : {1, 3}) {
    auto made = ImagesAndFlipped(15, 5, threads);
    Pipeline& pipe = *made;
    pipe.Add(OperatorDef{.op = "arith",
                         .inputs = {"images", "flipped"},
                         .outputs = {"sum"},
                         .attrs = {{"op", StringAttr("add")}}});
    pipe.SetOutputs({"sum"});
    int64_t seen = 0;
    EachBatch(pipe, [&](const BatchView& out) {
      auto sum = out.outputs[0].data().data<float>();
      REQUIRE(sum.ok());
      for (int64_t i = 0; i < out.outputs[0].num_samples(); ++i, ++seen) {
        const uint8_t* image = raw->data.data() + seen * 784;
        INFO(threads << " threads, sample " << seen);
        for (int y = 0; y < 28; ++y) {
          for (int x = 0; x < 28; ++x) {
            REQUIRE((*sum)[i * 784 + y * 28 + x] ==
                    static_cast<float>(image[y * 28 + x]) +
                        static_cast<float>(image[y * 28 + 27 - x]));
          }
        }
      }
    });
    CHECK(seen == 15);
    CHECK(pipe.Finish().ok());
  }
}

TEST_CASE("cat and stack join per-sample nodes along an axis") {
  // images [28, 28, 1]; flipped = flip(images); side = cat(images, flipped,
  // images, axis 1): [28, 84, 1]; pair = stack(images, flipped, axis -1):
  // [28, 28, 1, 2]. The reader's register and a stage's, 1 and 3 workers.
  auto raw = ReadIdx(kTestImages);
  REQUIRE(raw.ok());
  for (int threads : {1, 3}) {
    auto made = ImagesAndFlipped(10, 4, threads);
    Pipeline& pipe = *made;
    pipe.Add(OperatorDef{.op = "cat",
                         .inputs = {"images", "flipped", "images"},
                         .outputs = {"side"},
                         .attrs = {{"axis", IntAttr(1)}}});
    pipe.Add(OperatorDef{.op = "stack",
                         .inputs = {"images", "flipped"},
                         .outputs = {"pair"},
                         .attrs = {{"axis", IntAttr(-1)}}});
    pipe.SetOutputs({"side", "pair"});
    int64_t seen = 0;
    EachBatch(pipe, [&](const BatchView& out) {
      CHECK(out.outputs[0].data().shape() ==
            std::vector<int64_t>{out.outputs[0].num_samples(), 28, 84, 1});
      CHECK(out.outputs[1].data().shape() ==
            std::vector<int64_t>{out.outputs[1].num_samples(), 28, 28, 1, 2});
      auto side = out.outputs[0].data().data<uint8_t>();
      auto pair = out.outputs[1].data().data<uint8_t>();
      REQUIRE(side.ok());
      REQUIRE(pair.ok());
      for (int64_t i = 0; i < out.outputs[0].num_samples(); ++i, ++seen) {
        const uint8_t* image = raw->data.data() + seen * 784;
        INFO(threads << " threads, sample " << seen);
        for (int y = 0; y < 28; ++y) {
          for (int x = 0; x < 28; ++x) {
            const uint8_t pixel = image[y * 28 + x];
            const uint8_t mirrored = image[y * 28 + 27 - x];
            const int64_t row = i * 28 * 84 + y * 84;
            REQUIRE((*side)[row + x] == pixel);
            REQUIRE((*side)[row + 28 + x] == mirrored);
            REQUIRE((*side)[row + 56 + x] == pixel);
            REQUIRE((*pair)[i * 1568 + (y * 28 + x) * 2] == pixel);
            REQUIRE((*pair)[i * 1568 + (y * 28 + x) * 2 + 1] == mirrored);
          }
        }
      }
    });
    CHECK(seen == 10);
    CHECK(pipe.Finish().ok());
  }
}

TEST_CASE("cat and stack name a wrong axis, type or shape") {
  PipelineOptions options;
  options.batch_size = 4;
  auto build = [&](const std::string& op, int64_t axis,
                   const std::string& second) {
    Pipeline pipe(options);
    pipe.Add(FirstTestImages(8));
    pipe.Add(OperatorDef{.op = "cast",
                         .inputs = {"images"},
                         .outputs = {"floats"},
                         .attrs = {{"to", StringAttr("float32")}}});
    pipe.Add(OperatorDef{.op = "crop",
                         .inputs = {"images"},
                         .outputs = {"cropped"},
                         .attrs = {{"size", IntListAttr({20, 28})}}});
    pipe.Add(OperatorDef{.op = op,
                         .name = "join",
                         .inputs = {"images", second},
                         .outputs = {"joined"},
                         .attrs = {{"axis", IntAttr(axis)}}});
    pipe.SetOutputs({"joined"});
    return std::string(pipe.Build().message());
  };
  CHECK_THAT(build("cat", 3, "images"),
             Catch::Contains("operator 'join' (cat): attr 'axis': axis 3 for "
                             "samples of 3 dimension(s): in [-3, 2]"));
  CHECK_THAT(build("stack", -5, "images"),
             Catch::Contains("attr 'axis': axis -5 for samples of 3 "
                             "dimension(s): in [-4, 3]"));
  CHECK_THAT(build("cat", 0, "floats"),
             Catch::Contains("input 'floats' is float32, 'images' uint8"));
  // Bounds alone cannot tell: the sample's shapes are checked as it comes.
  CHECK(build("cat", 0, "cropped").empty());
  Pipeline pipe(options);
  pipe.Add(FirstTestImages(8));
  pipe.Add(OperatorDef{.op = "crop",
                       .inputs = {"images"},
                       .outputs = {"cropped"},
                       .attrs = {{"size", IntListAttr({20, 28})}}});
  pipe.Add(OperatorDef{.op = "stack",
                       .name = "join",
                       .inputs = {"images", "cropped"},
                       .outputs = {"joined"},
                       .attrs = {{"axis", IntAttr(0)}}});
  pipe.SetOutputs({"joined"});
  REQUIRE_OK(pipe.Build());
  REQUIRE(pipe.Run().ok());
  auto out = pipe.Outputs();
  REQUIRE_FALSE(out.ok());
  CHECK_THAT(std::string(out.status().message()),
             Catch::Contains("join") &&
                 Catch::Contains("input 1 has shape [20, 28, 1], input 0 "
                                 "[28, 28, 1]: axis 0 differs (stacked "
                                 "samples have one shape)"));
  pipe.Finish().IgnoreError();
}

// 255 - x (uint8, x's shape) and the sum of x's values (int64 scalar); a
// sample whose centre value (of a 28 x 28 image) is `refuse` fails.
class InvertAndSum final : public pipeline::SampleFunction {
 public:
  explicit InvertAndSum(int refuse = -1) : refuse_(refuse) {}
  absl::Status Call(absl::Span<const pipeline::SampleRef> inputs,
                    absl::Span<pipeline::Sample> outputs) const override {
    const pipeline::SampleRef& x = inputs[0];
    if (x.bytes == 784 && x.data[14 * 28 + 14] == refuse_) {
      return absl::InvalidArgumentError("refused");
    }
    outputs[0].Reshape(DT_UINT8, x.shape);
    int64_t sum = 0;
    for (int64_t k = 0; k < x.bytes; ++k) {
      outputs[0].storage[k] = static_cast<uint8_t>(255 - x.data[k]);
      sum += x.data[k];
    }
    outputs[1].Reshape(DT_INT64, {});
    *outputs[1].as<int64_t>() = sum;
    return absl::OkStatus();
  }

 private:
  int refuse_;
};

TEST_CASE("a registered sample function makes several outputs per sample") {
  auto raw = ReadIdx(kTestImages);
  REQUIRE(raw.ok());
  const int64_t id =
      pipeline::RegisterSampleFunction(std::make_shared<InvertAndSum>());
  for (int threads : {1, 2}) {
    PipelineOptions options;
    options.batch_size = 4;
    options.num_threads = threads;
    Pipeline pipe(options);
    pipe.Add(FirstTestImages(10));
    pipe.Add(OperatorDef{.op = "function",
                         .name = "invert",
                         .inputs = {"images"},
                         .outputs = {"inverted", "sum"},
                         .attrs = {{"function", IntAttr(id)}}});
    // An operator after it: its own stages.
    pipe.Add(OperatorDef{.op = "flip",
                         .inputs = {"inverted"},
                         .outputs = {"flipped"},
                         .attrs = {{"horizontal", FloatAttr(1.0)}}});
    pipe.SetOutputs({"flipped", "sum"});
    int64_t seen = 0;
    EachBatch(pipe, [&](const BatchView& out) {
      auto flipped = out.outputs[0].data().data<uint8_t>();
      auto sums = out.outputs[1].data().data<int64_t>();
      REQUIRE(flipped.ok());
      REQUIRE(sums.ok());
      for (int64_t i = 0; i < out.outputs[0].num_samples(); ++i, ++seen) {
        const uint8_t* image = raw->data.data() + seen * 784;
        INFO(threads << " threads, sample " << seen);
        int64_t sum = 0;
        for (int y = 0; y < 28; ++y) {
          for (int x = 0; x < 28; ++x) {
            sum += image[y * 28 + x];
            REQUIRE((*flipped)[i * 784 + y * 28 + 27 - x] ==
                    255 - image[y * 28 + x]);
          }
        }
        CHECK((*sums)[i] == sum);
      }
    });
    CHECK(seen == 10);
    CHECK(pipe.Finish().ok());
  }
  pipeline::UnregisterSampleFunction(id);
  // Unregistered: the build names the id.
  PipelineOptions options;
  options.batch_size = 4;
  Pipeline gone(options);
  gone.Add(FirstTestImages(4));
  gone.Add(OperatorDef{.op = "function",
                       .name = "invert",
                       .inputs = {"images"},
                       .outputs = {"inverted", "sum"},
                       .attrs = {{"function", IntAttr(id)}}});
  gone.SetOutputs({"inverted"});
  CHECK_THAT(std::string(gone.Build().message()),
             Catch::Contains("operator 'invert' (function): attr 'function': "
                             "no sample function " +
                             std::to_string(id) + " is registered"));
}

TEST_CASE("a sample function's error fails its sample, or skips it") {
  auto raw = ReadIdx(kTestImages);
  REQUIRE(raw.ok());
  // Refuses the largest centre value among the first 8 images (not 0, which
  // the zeros of the build's call would hit).
  const auto centre = [&](int64_t i) { return raw->data[i * 784 + 406]; };
  std::set<int> centres;
  for (int64_t i = 0; i < 8; ++i) centres.insert(centre(i));
  const int refuse = *centres.rbegin();
  int64_t refused = 0;
  for (int64_t i = 0; i < 8; ++i) refused += centre(i) == refuse;
  INFO("refusing centre value " << refuse << ": " << refused << " of 8");
  REQUIRE(refuse != 0);
  const int64_t id =
      pipeline::RegisterSampleFunction(std::make_shared<InvertAndSum>(refuse));
  for (OnError on_error : {OnError::kFail, OnError::kSkipSample}) {
    PipelineOptions options;
    options.batch_size = 8;
    options.on_error = on_error;
    Pipeline pipe(options);
    pipe.Add(FirstTestImages(8));
    pipe.Add(OperatorDef{.op = "function",
                         .name = "picky",
                         .inputs = {"images"},
                         .outputs = {"inverted", "sum"},
                         .attrs = {{"function", IntAttr(id)}}});
    pipe.SetOutputs({"inverted", "sum"});
    REQUIRE_OK(pipe.Build());
    REQUIRE(pipe.Run().ok());
    auto out = pipe.Outputs();
    if (on_error == OnError::kFail) {
      REQUIRE_FALSE(out.ok());
      CHECK_THAT(std::string(out.status().message()),
                 Catch::Contains("picky") && Catch::Contains("refused"));
    } else {
      // The pipeline tops the batch up with the next samples: 8 of them
      // only, so the batch holds the good ones.
      REQUIRE(out.ok());
      CHECK(out->outputs[1].num_samples() == 8 - refused);
      CHECK(pipe.skipped().size() == static_cast<size_t>(refused));
    }
    pipe.Finish().IgnoreError();
  }
  pipeline::UnregisterSampleFunction(id);
}

TEST_CASE("a pipeline whose only output is scalar labels hands them out") {
  // Labels are scalars: the batch of them has no sample dimensions at all.
  auto raw_labels = ReadIdx(kTestLabels);
  REQUIRE(raw_labels.ok());
  PipelineOptions options;
  options.batch_size = 1000;
  auto pipe = IdxPipeline(options);
  pipe->SetOutputs({"labels"});
  REQUIRE_OK(pipe->Build());
  int64_t seen = 0;
  REQUIRE(pipe->Run().ok());
  while (true) {
    auto out = pipe->Outputs();
    if (absl::IsOutOfRange(out.status())) break;
    REQUIRE_OK(out.status());
    REQUIRE(out->outputs.size() == 1);
    ConstTensorView labels = out->outputs[0].data();
    CHECK(labels.shape() == absl::Span<const int64_t>({1000}));
    auto values = labels.data<int32_t>();
    REQUIRE(values.ok());
    for (int64_t i = 0; i < 1000; ++i) {
      REQUIRE((*values)[i] == raw_labels->data[seen + i]);
    }
    seen += 1000;
    REQUIRE(pipe->Run().ok());
  }
  CHECK(seen == 10000);
}

// Writes `contents` to `path` and lists the file, with `label`, in the
// file reader `reader`'s attrs.
void AddListedFile(const std::string& path, const std::string& contents,
                   int label, OperatorDef* reader) {
  std::ofstream(path) << contents;
  reader->attrs["files"].mutable_list()->add_s(path);
  reader->attrs["labels"].mutable_list()->add_i(label);
}

TEST_CASE("a reader's file bytes batch as they are, boxed by the largest") {
  // DALI's first example returns the encoded files themselves: each
  // sample is its file's bytes, of that file's length.
  const std::string dir = testing::TestTempDir("raw_bytes");
  OperatorDef reader{
      .op = "file_reader", .name = "reader", .outputs = {"files", "ids"}};
  std::vector<std::string> contents;
  for (int i = 0; i < 6; ++i) {
    contents.push_back(std::string(10 + 37 * i, static_cast<char>('a' + i)));
    AddListedFile(absl::StrCat(dir, "/", i, ".jpg"), contents.back(), i,
                  &reader);
  }
  PipelineOptions options;
  options.batch_size = 3;
  options.num_threads = 2;
  Pipeline pipe(options);
  pipe.Add(reader);
  pipe.SetOutputs({"files", "ids"});
  REQUIRE_OK(pipe.Build());
  int64_t seen = 0;
  REQUIRE_OK(pipe.Run());
  while (true) {
    auto out = pipe.Outputs();
    if (absl::IsOutOfRange(out.status())) break;
    REQUIRE_OK(out.status());
    const OutputView& files = out->outputs[0];
    // The box is the largest file's length, the same in every batch.
    CHECK(files.data().shape() == absl::Span<const int64_t>({3, 195}));
    auto bytes = files.data().data<uint8_t>();
    auto ids = out->outputs[1].data().data<int32_t>();
    REQUIRE(bytes.ok());
    REQUIRE(ids.ok());
    for (int64_t s = 0; s < 3; ++s) {
      const std::string& want = contents[(*ids)[s]];
      REQUIRE(files.sample_shape(s) ==
              absl::Span<const int64_t>({static_cast<int64_t>(want.size())}));
      const std::string got(
          reinterpret_cast<const char*>(bytes->data() + s * 195), want.size());
      CHECK(got == want);
    }
    seen += 3;
    REQUIRE_OK(pipe.Run());
  }
  CHECK(seen == 6);

  // A file that cannot be read leaves no box to find: the error says what
  // to do.
  OperatorDef missing{.op = "file_reader",
                      .name = "reader",
                      .outputs = {"files"},
                      .attrs = {{"files", StringListAttr({dir + "/none.jpg"})},
                                {"labels", IntListAttr({0})}}};
  Pipeline unreadable(options);
  unreadable.Add(missing);
  unreadable.SetOutputs({"files"});
  CHECK_THAT(std::string(unreadable.Build().message()),
             Catch::Contains("not known before the data is read"));
}

// The sample ids (labels) shard `shard` of `shards` yields in epochs 0, 1,
// ...: 40 files, labelled by their index, whose "classes" are runs of ten
// in sorted order.
std::vector<std::vector<int32_t>> ShardEpochs(int shard, int shards,
                                              int64_t window, bool stick,
                                              int epochs) {
  const std::string dir = testing::TestTempDir("shards");
  OperatorDef reader{.op = "file_reader",
                     .name = "reader",
                     .outputs = {"files", "ids"},
                     .attrs = {{"shard_id", IntAttr(shard)},
                               {"num_shards", IntAttr(shards)},
                               {"shuffle_window", IntAttr(window)},
                               {"stick_to_shard", BoolAttr(stick)}}};
  for (int i = 0; i < 40; ++i) {
    AddListedFile(absl::StrCat(dir, "/", 100 + i, ".jpg"),
                  absl::StrCat("sample ", i), i, &reader);
  }
  PipelineOptions options;
  options.batch_size = 4;
  options.seed = 11;
  Pipeline pipe(options);
  pipe.Add(reader);
  pipe.SetOutputs({"ids"});
  REQUIRE_OK(pipe.Build());
  std::vector<std::vector<int32_t>> seen(epochs);
  for (int epoch = 0; epoch < epochs; ++epoch) {
    if (epoch > 0) REQUIRE_OK(pipe.Reset());
    REQUIRE_OK(pipe.Run());
    while (true) {
      auto out = pipe.Outputs();
      if (absl::IsOutOfRange(out.status())) break;
      REQUIRE_OK(out.status());
      auto ids = out->outputs[0].data().data<int32_t>();
      REQUIRE(ids.ok());
      seen[epoch].insert(seen[epoch].end(), ids->begin(), ids->end());
      REQUIRE_OK(pipe.Run());
    }
  }
  return seen;
}

TEST_CASE("shards are random subsets, rotate between epochs, and are equal") {
  // Shuffled: every shard draws from every class, and the shards of an
  // epoch together hold every sample once (3 shards of 40: 14, 13 and 13,
  // the short ones padded with their last sample to 14).
  std::vector<std::vector<std::vector<int32_t>>> shards;
  for (int shard = 0; shard < 3; ++shard) {
    shards.push_back(ShardEpochs(shard, 3, 16, /*stick=*/false, 3));
  }
  std::set<int32_t> all;
  for (int shard = 0; shard < 3; ++shard) {
    INFO("shard " << shard);
    const std::vector<int32_t>& ids = shards[shard][0];
    CHECK(ids.size() == 14);
    std::set<int32_t> classes;
    for (int32_t id : ids) classes.insert(id / 10);
    CHECK(classes.size() >= 3);
    all.insert(ids.begin(), ids.end());
    // The next epoch, the next shard's samples (in an order of its own).
    for (int epoch = 1; epoch < 3; ++epoch) {
      std::vector<int32_t> now = shards[shard][epoch];
      std::vector<int32_t> was = shards[(shard + epoch) % 3][0];
      std::sort(now.begin(), now.end());
      std::sort(was.begin(), was.end());
      CHECK(now == was);
    }
  }
  CHECK(all.size() == 40);
  // stick_to_shard keeps a rank on its shard; unshuffled shards are runs.
  auto stuck = ShardEpochs(1, 2, 16, /*stick=*/true, 2);
  std::sort(stuck[0].begin(), stuck[0].end());
  std::sort(stuck[1].begin(), stuck[1].end());
  CHECK(stuck[0] == stuck[1]);
  auto runs = ShardEpochs(1, 2, 0, /*stick=*/true, 1);
  std::vector<int32_t> second_half(20);
  std::iota(second_half.begin(), second_half.end(), 20);
  CHECK(runs[0] == second_half);
}

TEST_CASE("same seed, same batches: whatever the threads and prefetch depth") {
  const uint64_t seed = testing::TestSeed("pipeline determinism");
  const std::string dir = ImageDir("determinism", 45, 40, 0);
  examples::ImagePipelineConfig config{dir, /*resize=*/36, /*crop=*/32,
                                       /*shuffle_window=*/8};
  uint64_t reference = 0;
  for (int threads : {1, 2, 3}) {
    for (int depth : {1, 3}) {
      PipelineOptions options;
      options.batch_size = 8;
      options.num_threads = threads;
      options.prefetch_depth = depth;
      options.seed = seed;
      auto pipe = examples::MakeImagePipeline(config, options);
      REQUIRE_OK(pipe->Build());
      uint64_t epoch0 = EpochHash(pipe.get(), depth);
      REQUIRE(pipe->Reset().ok());
      uint64_t epoch1 = EpochHash(pipe.get(), depth);
      INFO("threads " << threads << ", prefetch " << depth);
      CHECK(epoch0 != epoch1);  // each epoch has its own order and crops
      if (reference == 0) reference = epoch0;
      CHECK(epoch0 == reference);
    }
  }
  PipelineOptions other;
  other.batch_size = 8;
  other.seed = seed + 1;
  auto pipe = examples::MakeImagePipeline(config, other);
  REQUIRE_OK(pipe->Build());
  CHECK(EpochHash(pipe.get(), 2) != reference);
}

// Every batch of one epoch, its images output as floats, in order.
std::vector<std::vector<float>> EpochImages(Pipeline* pipe) {
  std::vector<std::vector<float>> batches;
  REQUIRE(pipe->Run().ok());
  while (true) {
    auto out = pipe->Outputs();
    if (absl::IsOutOfRange(out.status())) break;
    INFO(out.status().message());
    REQUIRE(out.ok());
    const ConstTensorView data = out->outputs[0].data();
    const float* values = static_cast<const float*>(data.raw_data());
    batches.emplace_back(values, values + data.elem_cnt());
    REQUIRE(pipe->Run().ok());
  }
  return batches;
}

TEST_CASE(
    "fused decoding: near the unfused chain, deterministic, bombs named") {
  // Photos of 600 x 800, resized to a shorter side of 256 and cropped to
  // 224: the fused step decodes each at 1/2 scale and only the crop's
  // region; one file claims 60000 x 60000 pixels.
  const std::string dir = testing::TestTempDir("fused");
  REQUIRE_OK(WritePhotoImages(dir, 20, 600, 800, 2));
  {
    auto huge = JpegClaiming(60000, 60000);
    REQUIRE(huge.ok());
    std::ofstream(dir + "/class1/zz_huge.jpg", std::ios::binary) << *huge;
  }
  const uint64_t seed = testing::TestSeed("fused decoding");
  examples::ImagePipelineConfig config{dir, 256, 224, 0};
  auto make = [&](bool fuse, int threads, int depth, OnError on_error) {
    PipelineOptions options;
    options.batch_size = 8;
    options.num_threads = threads;
    options.prefetch_depth = depth;
    options.seed = seed;
    options.fuse_decode = fuse;
    options.on_error = on_error;
    auto pipe = examples::MakeImagePipeline(config, options);
    REQUIRE_OK(pipe->Build());
    return pipe;
  };
  auto unfused = make(false, 2, 2, OnError::kSkipSample);
  const auto want = EpochImages(unfused.get());
  auto fused = make(true, 2, 2, OnError::kSkipSample);
  const auto got = EpochImages(fused.get());
  REQUIRE(got.size() == want.size());
  REQUIRE(got.size() == 3);  // 20 good photos in batches of 8
  // Normalized values (std about 57 of 255): the bounds of
  // image_decode_test (mean 4, max 48 levels) in these units.
  double sum = 0, worst = 0;
  int64_t count = 0;
  for (size_t b = 0; b < got.size(); ++b) {
    REQUIRE(got[b].size() == want[b].size());
    for (size_t i = 0; i < got[b].size(); ++i) {
      const double d = std::abs(got[b][i] - want[b][i]);
      sum += d;
      worst = std::max(worst, d);
      ++count;
    }
  }
  INFO("mean difference " << sum / count << ", max " << worst);
  CHECK(sum / count <= 4.0 / 57);
  CHECK(worst <= 48.0 / 57);
  CHECK(sum > 0);  // really decoded at another scale
  // The bomb was dropped and named, with the limit it broke.
  bool named = false;
  for (const SkippedSample& s : fused->skipped()) {
    named = named || (absl::StrContains(s.name, "zz_huge.jpg") &&
                      absl::StrContains(s.error, "above max_pixels"));
  }
  CHECK(named);
  // The same batches whatever the threads and prefetch.
  for (auto [threads, depth] : {std::pair{1, 1}, std::pair{3, 3}}) {
    auto again = make(true, threads, depth, OnError::kSkipSample);
    INFO("threads " << threads << ", prefetch " << depth);
    CHECK(EpochImages(again.get()) == got);
  }
  // Without skip_sample the bomb stops the run, named.
  auto failing = make(true, 2, 2, OnError::kFail);
  absl::Status failure;
  REQUIRE(failing->Run().ok());
  for (int i = 0; i < 5 && failure.ok(); ++i) {
    auto out = failing->Outputs();
    if (!out.ok()) failure = out.status();
    if (out.ok()) (void)failing->Run();
  }
  CHECK_THAT(std::string(failure.message()), Catch::Contains("zz_huge.jpg"));
  CHECK_THAT(std::string(failure.message()),
             Catch::Contains("60000 x 60000 = 3600000000 pixels, above "
                             "max_pixels 67108864"));
  // The fused operator written out by name, as DALI's users write it.
  PipelineOptions options;
  options.batch_size = 8;
  options.on_error = OnError::kSkipSample;
  Pipeline explicit_op(options);
  explicit_op.Add(OperatorDef{.op = "file_reader",
                              .outputs = {"files"},
                              .attrs = {{"dir", StringAttr(dir)}}});
  explicit_op.Add(OperatorDef{.op = "decode_random_crop",
                              .inputs = {"files"},
                              .outputs = {"images"},
                              .attrs = {{"size", IntListAttr({224, 224})},
                                        {"resize_shorter", IntAttr(256)}}});
  explicit_op.SetOutputs({"images"});
  REQUIRE_OK(explicit_op.Build());
  REQUIRE(explicit_op.Run().ok());
  auto batch = explicit_op.Outputs();
  REQUIRE(batch.ok());
  CHECK(batch->outputs[0].data().shape() ==
        std::vector<int64_t>{8, 224, 224, 3});
  CHECK(explicit_op.Finish().ok());
}

TEST_CASE(
    "a chain's last crop_mirror_normalize, run by the batch, gives its "
    "values") {
  // 21 good RGB images of 32 px and 2 corrupt files, skipped: the batches
  // of 5 then take samples held over from earlier chunks. A random window
  // and a random mirror per sample, so a sample finished with another's
  // generator would show.
  const std::string dir = ImageDir("finishing", 21, 32, 2);
  const uint64_t seed = testing::TestSeed("finishing in the batch");
  auto make = [&](bool fuse, int threads, int64_t crop) {
    PipelineOptions options;
    options.batch_size = 5;
    options.num_threads = threads;
    options.seed = seed;
    options.fuse_decode = fuse;
    options.on_error = OnError::kSkipSample;
    auto pipe = std::make_unique<Pipeline>(options);
    pipe->Add(OperatorDef{.op = "file_reader",
                          .outputs = {"files"},
                          .attrs = {{"dir", StringAttr(dir)}}});
    pipe->Add(OperatorDef{.op = "decode",
                          .inputs = {"files"},
                          .outputs = {"images"},
                          .attrs = {{"color", StringAttr("rgb")}}});
    pipe->Add(
        OperatorDef{.op = "crop_mirror_normalize",
                    .name = "cmn",
                    .inputs = {"images"},
                    .outputs = {"normalized"},
                    .attrs = {{"crop", IntListAttr({crop, crop})},
                              {"crop_pos", StringAttr("random")},
                              {"mirror", FloatAttr(0.5)},
                              {"mean", FloatListAttr({120.5, 110.25, 100})},
                              {"std", FloatListAttr({60, 55.5, 50})}}});
    pipe->SetOutputs({"normalized"});
    return pipe;
  };
  auto finishing = [](const Pipeline& pipe) {
    int chains = 0, batches = 0;
    for (const TaskProto& task : pipe.plan().task()) {
      const auto& attrs = task.kernel().attr();
      chains +=
          attrs.count("finish_in_batch") && attrs.at("finish_in_batch").b();
      batches += attrs.count("finish_ops") &&
                 attrs.at("finish_ops").list().s(0) == "crop_mirror_normalize";
    }
    return std::pair{chains, batches};
  };
  // fuse_decode = false: every operator where it was written.
  auto written = make(false, 2, 24);
  REQUIRE_OK(written->Build());
  CHECK(finishing(*written) == std::pair{0, 0});
  const auto want = EpochImages(written.get());
  REQUIRE(want.size() == 5);  // 21 good images in batches of 5
  REQUIRE(written->skipped().size() == 2);
  for (int threads : {1, 2, 3}) {
    INFO("threads " << threads);
    auto finished = make(true, threads, 24);
    REQUIRE_OK(finished->Build());
    CHECK(finishing(*finished) == std::pair{threads, 1});
    CHECK(EpochImages(finished.get()) == want);
  }
  // A window larger than the images fails both alike, naming the operator
  // and the file (the chain checks what the batch will run). One thread:
  // the first sample's failure is the one reported.
  std::string errors[2];
  for (bool fuse : {false, true}) {
    auto pipe = make(fuse, 1, 40);
    REQUIRE_OK(pipe->Build());
    REQUIRE(pipe->Run().ok());
    auto out = pipe->Outputs();
    REQUIRE_FALSE(out.ok());
    errors[fuse] = std::string(out.status().message());
  }
  CHECK(errors[0] == errors[1]);
  CHECK_THAT(errors[1], Catch::Contains("operator 'cmn'") &&
                            Catch::Contains("sample 0 of epoch 0 ('") &&
                            Catch::Contains("does not fit in the image"));
}

TEST_CASE("the reader is never more than the prefetch depth ahead") {
  for (int depth : {1, 2, 4}) {
    PipelineOptions options;
    options.batch_size = 50;
    options.num_threads = 2;
    options.prefetch_depth = depth;
    auto pipe = IdxPipeline(options);
    REQUIRE_OK(pipe->Build());
    // Ask for far more than the depth at once: the rest waits its turn.
    for (int i = 0; i < 20; ++i) REQUIRE(pipe->Run().ok());
    INFO("prefetch depth " << depth);
    const bool filled =
        testing::WaitUntil([&] { return pipe->chunks_read() >= depth; });
    INFO("chunks read " << pipe->chunks_read());
    REQUIRE(filled);
    CHECK(pipe->chunks_read() == depth);
    for (int taken = 1; taken <= 20; ++taken) {
      auto out = pipe->Outputs();
      REQUIRE(out.ok());
      CHECK(out->index == taken - 1);
      // Taking one lets exactly one more be read, up to what was asked.
      const int64_t want = std::min<int64_t>(20, taken + depth);
      REQUIRE(testing::WaitUntil([&] { return pipe->chunks_read() >= want; }));
      CHECK(pipe->chunks_read() <= taken + depth);
    }
    CHECK(pipe->chunks_read() == 20);
  }
}

TEST_CASE("a corrupt file stops the pipeline, naming operator and file") {
  const std::string dir = ImageDir("corrupt", 12, 24, 1);
  PipelineOptions options;
  options.batch_size = 4;
  options.num_threads = 2;
  auto pipe = examples::MakeImagePipeline(
      examples::ImagePipelineConfig{dir, 0, 20, 0}, options);
  REQUIRE_OK(pipe->Build());
  absl::Status failure;
  for (int i = 0; i < 3; ++i) REQUIRE(pipe->Run().ok());
  for (int i = 0; i < 10 && failure.ok(); ++i) {
    auto out = pipe->Outputs();
    if (!out.ok()) failure = out.status();
    if (out.ok()) (void)pipe->Run();
  }
  REQUIRE_FALSE(failure.ok());
  const std::string message(failure.message());
  CHECK_THAT(message, Catch::Contains("operator 'decode"));
  CHECK_THAT(message, Catch::Contains("broken/truncated0.jpg"));
  CHECK_THAT(message, Catch::Contains("sample 12 of epoch 0"));
  // From now on every call reports it.
  CHECK(pipe->Run() == failure);
  CHECK(pipe->Outputs().status() == failure);
  CHECK(pipe->Reset() == failure);
  CHECK(pipe->status() == failure);
}

TEST_CASE("skip_sample drops bad files, names them, and keeps batches full") {
  const std::string dir = ImageDir("skipping", 22, 24, 3);
  // Decoding and a fixed resize only: no randomness, so the good images
  // must come out exactly as from a directory without the bad ones.
  auto make = [](const std::string& from, const std::vector<std::string>& files,
                 OnError on_error) {
    PipelineOptions options;
    options.batch_size = 4;
    options.num_threads = 2;
    options.on_error = on_error;
    auto pipe = std::make_unique<Pipeline>(options);
    OperatorDef reader{
        .op = "file_reader", .name = "reader", .outputs = {"files"}};
    if (files.empty()) {
      reader.attrs["dir"] = StringAttr(from);
    } else {
      for (const auto& f : files) {
        reader.attrs["files"].mutable_list()->add_s(f);
      }
    }
    pipe->Add(reader);
    pipe->Add(OperatorDef{
        .op = "decode", .inputs = {"files"}, .outputs = {"images"}});
    pipe->SetOutputs({"images"});
    // Decoded sizes are known only from the data: the batch needs a bound.
    return pipe;
  };
  auto unbounded = make(dir, {}, OnError::kSkipSample);
  absl::Status unbounded_error = unbounded->Build();
  CHECK_THAT(std::string(unbounded_error.message()),
             Catch::Contains("'images' has samples of [-1, -1, 3]"));

  auto listed = ListImageDirectory(dir);
  REQUIRE(listed.ok());
  std::vector<std::string> good, all;
  for (const FileEntry& f : *listed) {
    all.push_back(f.path);
    if (f.path.find("/broken/") == std::string::npos) good.push_back(f.path);
  }
  // Put the broken files in the middle of the epoch.
  std::vector<std::string> mixed(good.begin(), good.begin() + 9);
  for (const auto& f : all) {
    if (f.find("/broken/") != std::string::npos) mixed.push_back(f);
  }
  mixed.insert(mixed.end(), good.begin() + 9, good.end());
  REQUIRE(mixed.size() == 25);

  auto run = [&](const std::vector<std::string>& files, OnError on_error,
                 int64_t* images, int64_t* batches,
                 std::vector<SkippedSample>* skipped) {
    PipelineOptions options;
    options.batch_size = 4;
    options.num_threads = 2;
    options.on_error = on_error;
    Pipeline pipe(options);
    OperatorDef reader{
        .op = "file_reader", .name = "reader", .outputs = {"files"}};
    for (const auto& f : files) reader.attrs["files"].mutable_list()->add_s(f);
    pipe.Add(reader);
    pipe.Add(OperatorDef{
        .op = "decode", .inputs = {"files"}, .outputs = {"decoded"}});
    pipe.Add(OperatorDef{.op = "resize",
                         .inputs = {"decoded"},
                         .outputs = {"images"},
                         .attrs = {{"size", IntListAttr({16, 12})}}});
    pipe.SetOutputs({"images"});
    REQUIRE_OK(pipe.Build());
    uint64_t hash = examples::kHashSeed;
    for (int i = 0; i < 2; ++i) REQUIRE(pipe.Run().ok());
    *images = 0;
    *batches = 0;
    while (true) {
      auto out = pipe.Outputs();
      if (absl::IsOutOfRange(out.status())) break;
      REQUIRE(out.ok());
      const int64_t n = out->outputs[0].num_samples();
      // Every batch is full but the last.
      if (*images + n < 22) CHECK(n == 4);
      hash = examples::HashBatch(*out, hash);
      *images += n;
      ++*batches;
      REQUIRE(pipe.Run().ok());
    }
    *skipped = pipe.skipped();
    return hash;
  };
  int64_t images = 0, batches = 0, clean_images = 0, clean_batches = 0;
  std::vector<SkippedSample> skipped, none;
  uint64_t hash = run(mixed, OnError::kSkipSample, &images, &batches, &skipped);
  uint64_t clean =
      run(good, OnError::kFail, &clean_images, &clean_batches, &none);
  CHECK(images == 22);
  CHECK(batches == 6);  // 5 of 4 and one of 2
  CHECK(clean_images == 22);
  CHECK(hash == clean);
  REQUIRE(skipped.size() == 3);
  CHECK(none.empty());
  std::set<std::string> names;
  for (const SkippedSample& s : skipped) {
    names.insert(fs::path(s.name).filename().string());
    CHECK_THAT(s.error, Catch::Contains("operator 'decode"));
    CHECK(s.epoch == 0);
  }
  CHECK(names == std::set<std::string>{"garbage2.jpg", "truncated0.jpg",
                                       "truncated1.png"});
  // A file that cannot be opened is skipped as well.
  std::vector<std::string> gone = good;
  gone.insert(gone.begin() + 3, dir + "/no-such-file.jpg");
  run(gone, OnError::kSkipSample, &images, &batches, &skipped);
  CHECK(images == 22);
  REQUIRE(skipped.size() == 1);
  CHECK_THAT(skipped[0].error, Catch::Contains("cannot open"));
}

TEST_CASE("Build reports every problem, naming the operator") {
  PipelineOptions options;
  Pipeline pipe(options);
  pipe.Add(OperatorDef{.op = "file_reader",
                       .name = "reader",
                       .outputs = {"files"},
                       .attrs = {{"dir", StringAttr("/nonexistent")}}});
  pipe.Add(
      OperatorDef{.op = "decode", .inputs = {"filez"}, .outputs = {"decoded"}});
  pipe.Add(
      OperatorDef{.op = "sharpen", .inputs = {"files"}, .outputs = {"sharp"}});
  pipe.Add(OperatorDef{.op = "crop",
                       .name = "cropper",
                       .inputs = {"files"},
                       .outputs = {"cropped"},
                       .attrs = {{"size", IntListAttr({0, 3})}}});
  pipe.Add(OperatorDef{.op = "flip",
                       .inputs = {"files"},
                       .outputs = {"flipped"},
                       .device = "tpu"});
  pipe.SetOutputs({"files"});
  absl::Status status = pipe.Build();
  REQUIRE_FALSE(status.ok());
  const std::string message(status.message());
  CHECK_THAT(message,
             Catch::Contains("operator 'decoded' (decode): input 'filez'"));
  CHECK_THAT(message, Catch::Contains("operator 'sharp' (sharpen): unknown"));
  CHECK_THAT(message,
             Catch::Contains("operator 'cropper' (crop): attr 'size'"));
  CHECK_THAT(message, Catch::Contains("device 'tpu'"));
  CHECK(absl::IsFailedPrecondition(pipe.Run()));

  // The reader's own checks run at Build too.
  Pipeline empty(options);
  empty.Add(OperatorDef{.op = "file_reader",
                        .name = "reader",
                        .outputs = {"files"},
                        .attrs = {{"dir", StringAttr("/nonexistent")}}});
  empty.SetOutputs({"files"});
  absl::Status missing = empty.Build();
  CHECK_THAT(std::string(missing.message()),
             Catch::Contains("operator 'reader' (file_reader): attr 'dir'"));

  PipelineOptions bad;
  bad.batch_size = 0;
  bad.num_threads = 0;
  Pipeline nothing(bad);
  CHECK_THAT(std::string(nothing.Build().message()),
             Catch::Contains("batch_size"));
}

TEST_CASE(
    "a pipeline's plan is an ordinary plan: validated, one actor per "
    "worker, chains of operators fused, prefetch depth as register_num") {
  PipelineOptions options;
  options.batch_size = 8;
  options.num_threads = 3;
  options.prefetch_depth = 3;
  const std::string dir = ImageDir("plan", 6, 24, 0);
  auto pipe = examples::MakeImagePipeline(
      examples::ImagePipelineConfig{dir, 0, 16, 0}, options);
  REQUIRE_OK(pipe->Build());
  const Plan& plan = pipe->plan();
  int chains = 0;
  for (const TaskProto& task : plan.task()) {
    if (task.kernel().op_type() == "pipeline.chain") {
      CHECK(task.name() ==
            absl::StrCat("decode+crop+flip+normalize@", chains++));
      const auto& ops = task.kernel().attr().at("ops").list().s();
      CHECK(std::vector<std::string>(ops.begin(), ops.end()) ==
            std::vector<std::string>{"decode", "crop", "flip",
                                     "crop_mirror_normalize"});
      // Each operator's own attributes, by its place in the chain.
      CHECK(task.kernel().attr().at("1.random").b());
      CHECK(task.kernel().attr().at("0.color").s() == "rgb");
    }
    for (const auto& [key, reg] : task.produced_regst_desc()) {
      if (task.name() == "schedule") continue;
      CHECK(reg.register_num() == 3);
    }
  }
  CHECK(chains == 3);  // one actor per worker
  auto compiled = CompilePlan(plan);
  INFO(compiled.status().message());
  CHECK(compiled.ok());

  // A node read twice (an output and an operator's input) stays a register
  // between two actors per worker, and both come out right.
  PipelineOptions two;
  two.batch_size = 4;
  two.num_threads = 2;
  Pipeline branch(two);
  branch.Add(OperatorDef{.op = "idx_reader",
                         .name = "reader",
                         .outputs = {"raw"},
                         .attrs = {{"images", StringAttr(kTestImages)}}});
  branch.Add(OperatorDef{.op = "flip",
                         .inputs = {"raw"},
                         .outputs = {"flipped"},
                         .attrs = {{"horizontal", FloatAttr(1.0)}}});
  branch.Add(OperatorDef{.op = "cast",
                         .inputs = {"flipped"},
                         .outputs = {"wide"},
                         .attrs = {{"to", StringAttr("int32")}}});
  branch.SetOutputs({"flipped", "wide"});
  REQUIRE_OK(branch.Build());
  int flips = 0, casts = 0;
  for (const TaskProto& task : branch.plan().task()) {
    flips += task.kernel().op_type() == "pipeline.flip";
    casts += task.kernel().op_type() == "pipeline.cast";
  }
  CHECK((flips == 2 && casts == 2));
  REQUIRE_OK(branch.Run());
  auto out = branch.Outputs();
  REQUIRE(out.ok());
  auto flipped = out->outputs[0].data().data<uint8_t>();
  auto wide = out->outputs[1].data().data<int32_t>();
  REQUIRE(flipped.ok());
  REQUIRE(wide.ok());
  REQUIRE(flipped->size() == wide->size());
  for (size_t k = 0; k < flipped->size(); ++k) {
    REQUIRE((*wide)[k] == (*flipped)[k]);
  }
}

TEST_CASE("ShareOutputs holds batches zero-copy until ReleaseOutputs") {
  auto raw = ReadIdx(kTestImages);
  REQUIRE(raw.ok());
  PipelineOptions options;
  options.batch_size = 10;
  options.prefetch_depth = 3;
  auto pipe = IdxPipeline(options);
  REQUIRE_OK(pipe->Build());
  CHECK(absl::IsFailedPrecondition(pipe->ShareOutputs().status()));
  CHECK(absl::IsFailedPrecondition(pipe->ReleaseOutputs()));
  for (int i = 0; i < 5; ++i) REQUIRE(pipe->Run().ok());
  std::vector<BatchView> held;
  for (int i = 0; i < 3; ++i) {
    auto out = pipe->ShareOutputs();
    REQUIRE(out.ok());
    held.push_back(*out);
  }
  absl::Status full = pipe->ShareOutputs().status();
  CHECK(absl::IsFailedPrecondition(full));
  CHECK_THAT(std::string(full.message()), Catch::Contains("ReleaseOutputs"));
  // All three held batches are intact, each its own register.
  for (int i = 0; i < 3; ++i) {
    CHECK(held[i].index == i);
    CHECK(std::memcmp(held[i].outputs[0].data().raw_data(),
                      raw->data.data() + i * 10 * 784, 10 * 784) == 0);
  }
  REQUIRE(pipe->ReleaseOutputs().ok());
  auto fourth = pipe->ShareOutputs();
  REQUIRE(fourth.ok());
  CHECK(fourth->index == 3);
  CHECK(std::memcmp(held[2].outputs[0].data().raw_data(),
                    raw->data.data() + 2 * 10 * 784, 10 * 784) == 0);
  // Outputs releases everything held, then takes the next.
  auto fifth = pipe->Outputs();
  REQUIRE(fifth.ok());
  CHECK(fifth->index == 4);
  CHECK(absl::IsNotFound(fifth->output("nope").status()));
}

TEST_CASE("external input: FeedInput batches flow through the operators") {
  PipelineOptions options;
  options.batch_size = 4;
  options.num_threads = 2;
  Pipeline pipe(options);
  pipe.Add(OperatorDef{.op = "external_source",
                       .outputs = {"raw"},
                       .attrs = {{"dtype", StringAttr("uint8")},
                                 {"shape", IntListAttr({2, 3, 1})}}});
  pipe.Add(OperatorDef{.op = "flip",
                       .inputs = {"raw"},
                       .outputs = {"flipped"},
                       .attrs = {{"horizontal", FloatAttr(1.0)}}});
  pipe.Add(OperatorDef{.op = "cast",
                       .inputs = {"flipped"},
                       .outputs = {"out"},
                       .attrs = {{"to", StringAttr("float32")}}});
  pipe.SetOutputs({"out"});
  REQUIRE_OK(pipe.Build());
  CHECK(pipe.epoch_size() == -1);
  CHECK(absl::IsFailedPrecondition(pipe.Outputs().status()));
  for (int round = 0; round < 3; ++round) {
    const int64_t n = round == 1 ? 3 : 4;  // a short batch too
    std::vector<uint8_t> values(n * 6);
    for (size_t i = 0; i < values.size(); ++i) values[i] = round * 50 + i;
    auto batch = Tensor::FromValues<uint8_t>({n, 2, 3, 1}, values);
    REQUIRE(batch.ok());
    REQUIRE(pipe.FeedInput("raw", *batch).ok());
    REQUIRE(pipe.Run().ok());
    auto out = pipe.Outputs();
    REQUIRE(out.ok());
    REQUIRE(out->outputs[0].num_samples() == n);
    auto floats = out->outputs[0].data().data<float>();
    REQUIRE(floats.ok());
    for (int64_t s = 0; s < n; ++s) {
      for (int y = 0; y < 2; ++y) {
        for (int x = 0; x < 3; ++x) {
          REQUIRE((*floats)[s * 6 + y * 3 + x] ==
                  values[s * 6 + y * 3 + (2 - x)]);
        }
      }
    }
  }
  // Larger than the declared sample shape, or of another type: refused,
  // and the pipeline stays usable.
  auto wrong =
      Tensor::FromValues<uint8_t>({1, 3, 3, 1}, std::vector<uint8_t>(9, 1));
  auto floats =
      Tensor::FromValues<float>({1, 2, 3, 1}, std::vector<float>(6, 1.0f));
  CHECK(absl::IsNotFound(pipe.FeedInput("nope", *wrong)));
  CHECK(absl::IsInvalidArgument(pipe.FeedInput("raw", *wrong)));
  CHECK(absl::IsInvalidArgument(pipe.FeedInput("raw", *floats)));
  CHECK(pipe.status().ok());
}

TEST_CASE("external input: own sample shapes, two sources in step") {
  PipelineOptions options;
  options.batch_size = 3;
  Pipeline pipe(options);
  pipe.Add(OperatorDef{.op = "external_source",
                       .outputs = {"values"},
                       .attrs = {{"dtype", StringAttr("int32")},
                                 {"shape", IntListAttr({2, 3})}}});
  pipe.Add(OperatorDef{
      .op = "external_source",
      .outputs = {"ids"},
      .attrs = {{"dtype", StringAttr("int64")}, {"shape", IntListAttr({})}}});
  pipe.SetOutputs({"values", "ids"});
  REQUIRE_OK(pipe.Build());
  // Row i holds 10 * i + k; sample i keeps the box [i % 2 + 1, i + 1].
  std::vector<int32_t> values(3 * 6);
  for (size_t k = 0; k < values.size(); ++k) values[k] = 10 * (k / 6) + k % 6;
  auto batch = *Tensor::FromValues<int32_t>({3, 2, 3}, values);
  auto shapes = *Tensor::FromValues<int64_t>(
      {3, 2}, std::vector<int64_t>{1, 1, 2, 2, 1, 3});
  auto ids = *Tensor::FromValues<int64_t>({3}, std::vector<int64_t>{7, 8, 9});
  auto two_ids = *Tensor::FromValues<int64_t>({2}, std::vector<int64_t>{7, 8});
  REQUIRE_OK(pipe.FeedInput("values", batch, &shapes));
  absl::Status short_batch = pipe.FeedInput("ids", two_ids);
  CHECK(short_batch.message() ==
        "FeedInput 'ids': 2 samples, but 'values' was fed 3 for the same "
        "batch");
  auto too_big = *Tensor::FromValues<int64_t>(
      {3, 2}, std::vector<int64_t>{1, 1, 3, 2, 1, 3});
  CHECK(pipe.FeedInput("values", batch, &too_big).message() ==
        "FeedInput 'values': sample 1 claims dimension 0 = 3, outside the "
        "batch's box [0, 2]");
  CHECK(pipe.FeedInput("nope", ids).message() ==
        "FeedInput: no external source 'nope' (there are 'values', 'ids')");
  REQUIRE_OK(pipe.Run());
  // Not scheduled until every source has its batch.
  CHECK(pipe.Outputs().status().message() ==
        "no input: FeedInput a batch for 'ids' first");
  REQUIRE_OK(pipe.FeedInput("ids", ids));
  REQUIRE_OK(pipe.Run());
  auto out = pipe.Outputs();
  REQUIRE_OK(out.status());
  const OutputView& got = out->outputs[0];
  const std::vector<std::vector<int64_t>> want_shapes = {
      {1, 1}, {2, 2}, {1, 3}};
  auto data = *got.data().data<int32_t>();
  for (int64_t i = 0; i < 3; ++i) {
    auto shape = got.sample_shape(i);
    REQUIRE(std::vector<int64_t>(shape.begin(), shape.end()) == want_shapes[i]);
    // Sample i sits at the start of its box [2, 3] of the batch.
    for (int64_t y = 0; y < shape[0]; ++y) {
      for (int64_t x = 0; x < shape[1]; ++x) {
        CHECK(data[i * 6 + y * 3 + x] == 10 * i + y * 3 + x);
      }
    }
  }
  CHECK(*out->outputs[1].data().data<int64_t>() ==
        absl::Span<const int64_t>(std::vector<int64_t>{7, 8, 9}));
}

TEST_CASE("a rounding cast works on samples, not on batches") {
  Pipeline pipe(PipelineOptions{});
  pipe.Add(OperatorDef{.op = "external_source",
                       .outputs = {"x"},
                       .attrs = {{"dtype", StringAttr("float32")},
                                 {"shape", IntListAttr({2})}}});
  pipe.Add(OperatorDef{.op = "batch", .inputs = {"x"}, .outputs = {"xb"}});
  pipe.Add(OperatorDef{
      .op = "cast",
      .name = "bytes",
      .inputs = {"xb"},
      .outputs = {"out"},
      .attrs = {{"to", StringAttr("uint8")}, {"round", BoolAttr(true)}}});
  pipe.SetOutputs({"out"});
  CHECK_THAT(std::string(pipe.Build().message()),
             Catch::Contains("operator 'bytes' (cast): attr 'round' applies "
                             "to samples"));
}

TEST_CASE("with a batch operator, every output must come out of it") {
  Pipeline pipe(PipelineOptions{});
  pipe.Add(OperatorDef{.op = "external_source",
                       .outputs = {"x"},
                       .attrs = {{"dtype", StringAttr("float32")},
                                 {"shape", IntListAttr({2})}}});
  pipe.Add(OperatorDef{
      .op = "external_source",
      .outputs = {"y"},
      .attrs = {{"dtype", StringAttr("int32")}, {"shape", IntListAttr({})}}});
  pipe.Add(OperatorDef{.op = "batch", .inputs = {"x"}, .outputs = {"xb"}});
  pipe.SetOutputs({"xb", "y"});
  CHECK(pipe.Build().message() ==
        "SetOutputs: 'y' is not batched: with a batch operator, every output "
        "must come out of it (the one batch drops a failed sample from all "
        "outputs)");
}

TEST_CASE("Build names attributes an operator does not take") {
  Pipeline pipe(PipelineOptions{});
  pipe.Add(OperatorDef{.op = "external_source",
                       .outputs = {"raw"},
                       .attrs = {{"dtype", StringAttr("uint8")},
                                 {"shape", IntListAttr({2})},
                                 {"size", IntAttr(3)}}});
  pipe.SetOutputs({"raw"});
  CHECK(pipe.Build().message() ==
        "operator 'raw' (external_source): unknown attr 'size' "
        "(external_source takes: dtype, shape)");
}

TEST_CASE("destroying a pipeline mid-epoch joins everything") {
  const std::string dir = ImageDir("teardown", 30, 24, 0);
  for (int held : {0, 1, 2}) {
    PipelineOptions options;
    options.batch_size = 3;
    options.num_threads = 2;
    options.prefetch_depth = 2;
    auto pipe = examples::MakeImagePipeline(
        examples::ImagePipelineConfig{dir, 0, 20, 0}, options);
    REQUIRE_OK(pipe->Build());
    for (int i = 0; i < 4; ++i) REQUIRE(pipe->Run().ok());
    for (int i = 0; i < held; ++i) REQUIRE(pipe->ShareOutputs().ok());
  }  // each destructor cancels the run; a hang here fails the test
}

TEST_CASE("Finish ends the run, with traces, even with input left unread") {
  PipelineOptions options;
  options.batch_size = 2;
  options.trace = true;
  Pipeline pipe(options);
  pipe.Add(OperatorDef{
      .op = "external_source",
      .outputs = {"raw"},
      .attrs = {{"dtype", StringAttr("int32")}, {"shape", IntListAttr({3})}}});
  pipe.Add(OperatorDef{.op = "cast",
                       .inputs = {"raw"},
                       .outputs = {"out"},
                       .attrs = {{"to", StringAttr("float64")}}});
  pipe.SetOutputs({"out"});
  REQUIRE_OK(pipe.Build());
  auto batch = Tensor::FromValues<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  REQUIRE(batch.ok());
  REQUIRE_OK(pipe.FeedInput("raw", *batch));
  REQUIRE_OK(pipe.FeedInput("raw", *batch));  // never scheduled
  REQUIRE_OK(pipe.Run());
  auto out = pipe.Outputs();
  REQUIRE(out.ok());
  CHECK(out->outputs[0].num_samples() == 2);
  REQUIRE_OK(pipe.Finish());
  // The trace has the plan's tasks; the cast acted for the one batch.
  bool cast_acted = false;
  for (const auto& task : pipe.trace().tasks) {
    if (task.name == "out") cast_acted = task.spans.size() == 1;
  }
  CHECK(cast_acted);
  CHECK(absl::IsFailedPrecondition(pipe.Run()));
}

}  // namespace
}  // namespace actorflow::internal::pipeline
