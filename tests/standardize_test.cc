// DALI's normalize on one sample (pipeline/standardize.h) against the
// statistics worked out here in double precision.
#include "pipeline/standardize.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "actor/act_context.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

Sample Floats(std::vector<int64_t> shape, const std::vector<double>& values) {
  Sample s;
  s.Reshape(DT_FLOAT32, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    s.as<float>()[i] = static_cast<float>(values[i]);
  }
  return s;
}

std::vector<double> Out(const Sample& s) {
  const float* f = s.ref().as<float>();
  return std::vector<double>(f, f + ShapeElemCnt(s.shape));
}

absl::Status Run(const std::map<std::string, AttrValue>& attrs,
                 const Sample& in, Sample* out) {
  auto op = MakeSampleOp("standardize");
  REQUIRE(op.ok());
  TaskProto task = KernelTask("pipeline.standardize", attrs);
  KernelInitContext ctx = MakeInitContext(task, {}, {});
  absl::Status ok = (*op)->Init(ctx);
  if (!ok.ok()) return ok;
  auto spec =
      (*op)->Infer(SampleSpec{in.type, {in.shape.begin(), in.shape.end()}});
  if (!spec.ok()) return spec.status();
  SampleRng rng;
  return (*op)->Apply(in.ref(), &rng, out);
}

TEST_CASE("normalize: the whole sample's mean and deviation") {
  Sample out;
  REQUIRE(Run({}, Floats({2, 2}, {1, 2, 3, 4}), &out).ok());
  const double sd = std::sqrt(1.25);
  const std::vector<double> want = {-1.5 / sd, -0.5 / sd, 0.5 / sd, 1.5 / sd};
  const std::vector<double> got = Out(out);
  for (size_t i = 0; i < want.size(); ++i) CHECK(got[i] == Approx(want[i]));
  // ddof 1, scale, shift and epsilon.
  REQUIRE(Run({{"ddof", IntAttr(1)},
               {"scale", FloatAttr(64)},
               {"shift", FloatAttr(128)},
               {"epsilon", FloatAttr(0.25)}},
              Floats({4}, {1, 2, 3, 4}), &out)
              .ok());
  const double sd1 = std::sqrt(5.0 / 3 + 0.25);
  CHECK(Out(out)[0] == Approx(64 * -1.5 / sd1 + 128));
  CHECK(Out(out)[3] == Approx(64 * 1.5 / sd1 + 128));
}

TEST_CASE("normalize over axes: each position of the others on its own") {
  // A 2 x 3 x 2 "HWC" image, reduced over H and W: per channel.
  std::vector<double> v;
  for (int i = 0; i < 12; ++i) v.push_back(i % 2 == 0 ? i : 100 - 3 * i);
  Sample out;
  REQUIRE(
      Run({{"axes", IntListAttr({0, 1})}}, Floats({2, 3, 2}, v), &out).ok());
  for (int c = 0; c < 2; ++c) {
    double mean = 0, var = 0;
    for (int p = 0; p < 6; ++p) mean += v[2 * p + c] / 6;
    for (int p = 0; p < 6; ++p) {
      var += (v[2 * p + c] - mean) * (v[2 * p + c] - mean) / 6;
    }
    for (int p = 0; p < 6; ++p) {
      INFO("channel " << c << " pixel " << p);
      CHECK(Out(out)[2 * p + c] ==
            Approx((v[2 * p + c] - mean) / std::sqrt(var)));
    }
  }
  // Reduced over the middle axis only: each (row, channel) its own.
  REQUIRE(Run({{"axes", IntListAttr({1})}}, Floats({2, 3, 2}, v), &out).ok());
  for (int y = 0; y < 2; ++y) {
    for (int c = 0; c < 2; ++c) {
      double sum = 0;
      for (int x = 0; x < 3; ++x) sum += Out(out)[(y * 3 + x) * 2 + c];
      CHECK(sum == Approx(0).margin(1e-5));
    }
  }
}

TEST_CASE("normalize with a given mean and stddev; constant data gives shift") {
  Sample in;
  const int64_t shape[] = {2, 2, 1};
  in.Reshape(DT_UINT8, shape);
  const uint8_t bytes[] = {0, 100, 200, 255};
  std::copy(bytes, bytes + 4, in.storage.begin());
  Sample out;
  REQUIRE(Run({{"mean", FloatAttr(100)}, {"stddev", FloatAttr(50)}}, in, &out)
              .ok());
  CHECK(Out(out) == std::vector<double>{-2, 0, 2, 3.1f});  // 155 / 50
  // The deviation computed around the given mean.
  REQUIRE(Run({{"mean", FloatAttr(0)}}, Floats({2}, {3, -3}), &out).ok());
  CHECK(Out(out) == std::vector<double>{1, -1});
  REQUIRE(Run({{"shift", FloatAttr(7)}}, Floats({3}, {5, 5, 5}), &out).ok());
  CHECK(Out(out) == std::vector<double>{7, 7, 7});
}

TEST_CASE("normalize names what is wrong") {
  Sample out;
  const Sample in = Floats({2, 2}, {1, 2, 3, 4});
  CHECK_THAT(std::string(Run({{"axes", IntListAttr({2})}}, in, &out).message()),
             Catch::Contains("attr 'axes': 2 is not an axis of samples"));
  CHECK_THAT(std::string(Run({{"ddof", IntAttr(4)}}, in, &out).message()),
             Catch::Contains("ddof 4 leaves no degree of freedom in groups "
                             "of 4 values"));
  CHECK_THAT(std::string(Run({{"stddev", FloatAttr(0)}}, in, &out).message()),
             Catch::Contains("attr 'stddev': above 0, got 0"));
  Sample wide;
  const int64_t shape[] = {2};
  wide.Reshape(DT_INT64, shape);
  CHECK_THAT(
      std::string(Run({}, wide, &out).message()),
      Catch::Contains("takes uint8, int32 or float32 samples, got int64"));
}

}  // namespace
}  // namespace actorflow::internal::pipeline
