// op_type image_batches: image files decoded into training batches inside a
// job, alone and split over devices, and the example job of an image
// pipeline feeding the perceptron (examples/jobs/image_mlp.pbtxt).
#include <catch2/catch.hpp>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "actorflow/job_builder.h"
#include "actorflow/job_compiler.h"
#include "actorflow/session.h"
#include "compiler/plan_or_job.h"
#include "pipeline/fixtures.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

using pipeline::Sample;

// Gray 4 x 4 image i: pixel k is 16 * i + k.
Sample GrayImage(int i) {
  Sample s;
  s.Reshape(DT_UINT8, {4, 4, 1});
  for (int k = 0; k < 16; ++k) s.as<uint8_t>()[k] = 16 * i + k;
  return s;
}

// Images 0..4 as PNG under dir/c<i % 2>/img<i>.png: sorted, the files are
// 0, 2, 4 (label 0) then 1, 3 (label 1).
std::string WriteGrayImages() {
  const std::string dir = testing::TestTempDir("gray");
  for (int i = 0; i < 5; ++i) {
    const std::string sub = absl::StrCat(dir, "/c", i % 2);
    std::filesystem::create_directories(sub);
    absl::StatusOr<std::string> png = pipeline::EncodePng(GrayImage(i).ref());
    REQUIRE(png.ok());
    std::ofstream(absl::StrCat(sub, "/img", i, ".png"), std::ios::binary)
        << *png;
  }
  return dir;
}

Plan MustCompile(const Job& job) {
  absl::StatusOr<CompiledJob> compiled = CompileJob(job);
  INFO(compiled.status().message());
  REQUIRE(compiled.ok());
  return std::move(compiled->plan);
}

// Every piece's x and y, fetched.
struct Batches {
  std::vector<std::vector<float>> x;
  std::vector<std::vector<int32_t>> y;
};
Batches RunAndFetch(const Job& job, int64_t pieces) {
  auto session = Session::Create(MustCompile(job));
  INFO(session.status().message());
  REQUIRE(session.ok());
  REQUIRE((*session)->Start(pieces).ok());
  Batches out;
  for (int64_t p = 0; p < pieces; ++p) {
    absl::StatusOr<Tensor> x = (*session)->Fetch("fx");
    absl::StatusOr<Tensor> y = (*session)->Fetch("fy");
    REQUIRE(x.ok());
    REQUIRE(y.ok());
    absl::Span<const float> xs = *x->data<float>();
    absl::Span<const int32_t> ys = *y->data<int32_t>();
    out.x.emplace_back(xs.begin(), xs.end());
    out.y.emplace_back(ys.begin(), ys.end());
  }
  REQUIRE((*session)->Wait().ok());
  return out;
}

JobBuilder GrayJob(const std::string& dir, int64_t size,
                   std::vector<int32_t> devices) {
  JobBuilder job(3);
  job.Op("images", "image_batches")
      .Attr("dir", dir)
      .Attr("batch", 2)
      .Attr("size", size)
      .Attr("mean", 1.0)
      .Attr("std", 2.0)
      .Place(DeviceKind::kCpu, devices);
  job.Op("fx", "fetch").Input("images.x");
  job.Op("fy", "fetch").Input("images.y");
  return job;
}

TEST_CASE("image_batches decodes, resizes and normalizes, in epoch order") {
  const std::string dir = WriteGrayImages();
  const std::vector<int> order = {0, 2, 4, 1, 3};
  const Batches whole = RunAndFetch(GrayJob(dir, 4, {0}).job(), 3);
  REQUIRE(whole.x.size() == 3);
  for (int p = 0; p < 3; ++p) {
    const int64_t rows = p < 2 ? 2 : 1;
    REQUIRE(whole.y[p].size() == static_cast<size_t>(rows));
    REQUIRE(whole.x[p].size() == static_cast<size_t>(rows * 16));
    for (int64_t r = 0; r < rows; ++r) {
      const int i = order[2 * p + r];
      CHECK(whole.y[p][r] == i % 2);
      for (int k = 0; k < 16; ++k) {
        // (pixel - mean) * (1 / std), in float32: exact here.
        CHECK(whole.x[p][r * 16 + k] == (16.0f * i + k - 1.0f) * 0.5f);
      }
    }
  }

  // Another size: bilinear resize, as the pipeline's Resize makes it.
  const Batches half = RunAndFetch(GrayJob(dir, 2, {0}).job(), 3);
  Sample small;
  REQUIRE(pipeline::Resize(GrayImage(0).ref(), 2, 2, &small).ok());
  REQUIRE(half.x[0].size() == 2 * 4);
  for (int k = 0; k < 4; ++k) {
    CHECK(half.x[0][k] == (small.as<uint8_t>()[k] - 1.0f) * 0.5f);
  }

  // Over two and three devices each task decodes its rows; gathered, the
  // batches are the same.
  CHECK(RunAndFetch(GrayJob(dir, 4, {0, 1}).job(), 3).x == whole.x);
  const Batches three = RunAndFetch(GrayJob(dir, 4, {0, 1, 2}).job(), 3);
  CHECK(three.x == whole.x);
  CHECK(three.y == whole.y);
}

TEST_CASE("image_batches: bad attrs and bad files are errors naming them") {
  const std::string dir = WriteGrayImages();
  auto compile_error = [](const Job& job) {
    absl::StatusOr<CompiledJob> compiled = CompileJob(job);
    REQUIRE_FALSE(compiled.ok());
    return std::string(compiled.status().message());
  };
  JobBuilder neither = GrayJob(dir, 4, {0});
  neither.job().mutable_op(0)->mutable_attr()->erase("dir");
  std::string error = compile_error(neither.job());
  INFO(error);
  CHECK(absl::StartsWith(error, "op 'images': "));
  CHECK(absl::StrContains(error, "give 'dir'"));

  error = compile_error(GrayJob(dir + "/none", 4, {0}).job());
  CHECK(absl::StrContains(error, dir + "/none"));
  error = compile_error(GrayJob(dir, 0, {0}).job());
  CHECK(absl::StrContains(error, "size 0"));

  // Garbage with an image's name: the piece that reads it fails, naming it.
  std::ofstream(dir + "/c0/img5.png") << "not a png";
  auto session = Session::Create(MustCompile(GrayJob(dir, 4, {0}).job()));
  REQUIRE(session.ok());
  REQUIRE((*session)->Start(3).ok());
  absl::Status failed;
  for (int p = 0; p < 3 && failed.ok(); ++p) {
    failed = (*session)->Fetch("fx").status();
  }
  absl::Status ended = (*session)->Wait().status();
  INFO(failed.message() << " / " << ended.message());
  CHECK(absl::StrContains(failed.ok() ? ended.message() : failed.message(),
                          dir + "/c0/img5.png"));
}

std::map<std::string, SinkSummary> RunJob(const Job& job) {
  auto session = Session::Create(MustCompile(job));
  INFO(session.status().message());
  REQUIRE(session.ok());
  absl::StatusOr<RunStats> run = (*session)->Run(-1);
  INFO(run.status().message());
  REQUIRE(run.ok());
  return (*session)->Sinks();
}

// The example, on 600 of make_images' files: 6 batches an epoch, 5 epochs.
TEST_CASE("the image pipeline feeding the MLP learns, decoded on either side") {
  const std::string dir = testing::TestTempDir("fashion_images");
  REQUIRE(pipeline::WriteFashionImages(dir, 600, 56, 0).ok());
  absl::StatusOr<Job> job = LoadJob("examples/jobs/image_mlp.pbtxt");
  INFO(job.status().message());
  REQUIRE(job.ok());
  job->set_total_piece_num(30);
  OpConf* images = job->mutable_op(0);
  REQUIRE(images->op_type() == "image_batches");
  (*images->mutable_attr())["dir"].set_s(dir);
  (*images->mutable_attr())["shuffle_window"].set_i(600);
  const auto split = RunJob(*job);
  images->clear_placement();  // decoded on device 0, sliced for the two
  const auto one = RunJob(*job);
  CHECK(split.at("correct").checksum == one.at("correct").checksum);
  CHECK(split.at("loss").checksum == one.at("loss").checksum);
  // Chance is 300 of the 3,000 samples seen.
  INFO("correct " << split.at("correct").checksum);
  CHECK(split.at("correct").checksum > 1500);
}

}  // namespace
}  // namespace actorflow::internal
