// DALI's noise operators (pipeline/noise.h) through their sample ops: the
// statistics each promises, the types' bounds, per-channel groups, the
// sample's own generator, and the errors.
#include "pipeline/noise.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <map>
#include <string>

#include "actor/act_context.h"
#include "pipeline/sample_ops.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

// An h x w x c image of one value.
Sample Flat(DataType type, int64_t h, int64_t w, int64_t c, double value) {
  Sample s;
  const int64_t shape[] = {h, w, c};
  s.Reshape(type, shape);
  for (int64_t i = 0; i < h * w * c; ++i) {
    if (type == DT_UINT8) {
      s.storage[i] = static_cast<uint8_t>(value);
    } else {
      s.as<float>()[i] = static_cast<float>(value);
    }
  }
  return s;
}

double At(const Sample& s, int64_t i) {
  return s.type == DT_UINT8 ? s.storage[i] : s.ref().as<float>()[i];
}

absl::Status Apply(const std::string& op,
                   const std::map<std::string, AttrValue>& attrs,
                   const Sample& in, uint64_t position, Sample* out) {
  auto made = MakeSampleOp(op);
  REQUIRE(made.ok());
  TaskProto task = KernelTask("pipeline." + op, attrs);
  KernelInitContext ctx = MakeInitContext(task, {}, {});
  absl::Status ok = (*made)->Init(ctx);
  if (!ok.ok()) return ok;
  SampleRng rng(5, 1, 0, position);
  return (*made)->Apply(in.ref(), &rng, out);
}

struct Moments {
  double mean = 0, variance = 0;
};
Moments Of(const Sample& s) {
  const int64_t n = ShapeElemCnt(s.shape);
  Moments m;
  for (int64_t i = 0; i < n; ++i) m.mean += At(s, i);
  m.mean /= n;
  for (int64_t i = 0; i < n; ++i) {
    m.variance += (At(s, i) - m.mean) * (At(s, i) - m.mean);
  }
  m.variance /= n;
  return m;
}

TEST_CASE("gaussian_noise adds N(mean, stddev), stored as the type") {
  for (DataType type : {DT_FLOAT32, DT_UINT8}) {
    INFO(DataTypeName(type));
    const Sample in = Flat(type, 100, 100, 3, 100);
    Sample out;
    REQUIRE(Apply("gaussian_noise",
                  {{"mean", FloatAttr(5)}, {"stddev", FloatAttr(10)}}, in, 0,
                  &out)
                .ok());
    REQUIRE(out.type == type);
    REQUIRE(out.shape == in.shape);
    const Moments m = Of(out);
    // 30,000 draws at a fixed seed: the mean within 0.5 (its standard
    // error is 0.06), the deviation within 3%.
    CHECK(std::abs(m.mean - 105) < 0.5);
    CHECK(std::abs(std::sqrt(m.variance) - 10) < 0.3);
    if (type == DT_UINT8) {
      for (int64_t i = 0; i < 30000; ++i)
        CHECK(At(out, i) == std::round(At(out, i)));
    }
  }
  // uint8 clamps: noise around 250 never passes 255.
  Sample out;
  REQUIRE(Apply("gaussian_noise", {{"stddev", FloatAttr(20)}},
                Flat(DT_UINT8, 50, 50, 1, 250), 0, &out)
              .ok());
  int top = 0;
  for (int64_t i = 0; i < 2500; ++i) top += At(out, i) == 255;
  CHECK(top > 2500 / 4);  // P(noise > 5) is about 0.4
  // stddev 0: exactly the mean added.
  REQUIRE(Apply("gaussian_noise",
                {{"mean", FloatAttr(-2.5)}, {"stddev", FloatAttr(0)}},
                Flat(DT_FLOAT32, 4, 4, 3, 1), 0, &out)
              .ok());
  for (int64_t i = 0; i < 48; ++i) CHECK(At(out, i) == -1.5);
}

TEST_CASE("noise is the sample's own: the same position, the same noise") {
  const Sample in = Flat(DT_FLOAT32, 8, 8, 3, 0);
  Sample a, b, c;
  REQUIRE(Apply("gaussian_noise", {}, in, 7, &a).ok());
  REQUIRE(Apply("gaussian_noise", {}, in, 7, &b).ok());
  REQUIRE(Apply("gaussian_noise", {}, in, 8, &c).ok());
  CHECK(a.storage == b.storage);
  CHECK(a.storage != c.storage);
}

TEST_CASE("salt_and_pepper_noise: prob, salt_vs_pepper, pixels or values") {
  const Sample in = Flat(DT_UINT8, 200, 200, 3, 100);
  for (bool per_channel : {false, true}) {
    INFO("per_channel " << per_channel);
    Sample out;
    REQUIRE(Apply("salt_and_pepper_noise",
                  {{"prob", FloatAttr(0.3)},
                   {"salt_vs_pepper", FloatAttr(0.25)},
                   {"per_channel", BoolAttr(per_channel)}},
                  in, 0, &out)
                .ok());
    int64_t salt = 0, pepper = 0, mixed = 0;
    for (int64_t i = 0; i < 200 * 200 * 3; ++i) {
      salt += At(out, i) == 255;
      pepper += At(out, i) == 0;
      CHECK((At(out, i) == 255 || At(out, i) == 0 || At(out, i) == 100));
    }
    for (int64_t p = 0; p < 200 * 200; ++p) {
      mixed += At(out, 3 * p) != At(out, 3 * p + 1) ||
               At(out, 3 * p) != At(out, 3 * p + 2);
    }
    const double values = 200 * 200 * 3;
    CHECK(std::abs((salt + pepper) / values - 0.3) < 0.01);
    CHECK(std::abs(salt / double(salt + pepper) - 0.25) < 0.02);
    // One draw per pixel: its channels together; per channel: apart.
    if (per_channel) {
      CHECK(mixed > 1000);
    } else {
      CHECK(mixed == 0);
    }
  }
  // Float's defaults are 1 and -1; given values win.
  Sample out;
  REQUIRE(Apply("salt_and_pepper_noise", {{"prob", FloatAttr(1)}},
                Flat(DT_FLOAT32, 20, 20, 1, 0.25), 0, &out)
              .ok());
  int64_t ones = 0;
  for (int64_t i = 0; i < 400; ++i) {
    CHECK((At(out, i) == 1 || At(out, i) == -1));
    ones += At(out, i) == 1;
  }
  CHECK(ones > 150);
  CHECK(ones < 250);
  REQUIRE(Apply("salt_and_pepper_noise",
                {{"prob", FloatAttr(1)},
                 {"salt_vs_pepper", FloatAttr(1)},
                 {"salt_val", FloatAttr(7)}},
                Flat(DT_UINT8, 5, 5, 3, 0), 0, &out)
              .ok());
  for (int64_t i = 0; i < 75; ++i) CHECK(At(out, i) == 7);
}

TEST_CASE("shot_noise: factor * Poisson(value / factor)") {
  const Sample in = Flat(DT_UINT8, 100, 100, 3, 100);
  Sample out;
  REQUIRE(Apply("shot_noise", {{"factor", FloatAttr(4)}}, in, 0, &out).ok());
  for (int64_t i = 0; i < 30000; ++i) {
    CHECK(std::fmod(At(out, i), 4.0) == 0);
  }
  const Moments m = Of(out);
  // Poisson(25) * 4: mean 100, variance 25 * 16 = 400.
  CHECK(std::abs(m.mean - 100) < 0.5);
  CHECK(std::abs(m.variance - 400) < 20);
  // Float values, and 0 and below stay 0.
  REQUIRE(Apply("shot_noise", {{"factor", FloatAttr(0.5)}},
                Flat(DT_FLOAT32, 100, 100, 1, 3), 0, &out)
              .ok());
  const Moments f = Of(out);
  CHECK(std::abs(f.mean - 3) < 0.05);
  CHECK(std::abs(f.variance - 1.5) < 0.1);
  REQUIRE(Apply("shot_noise", {}, Flat(DT_FLOAT32, 4, 4, 1, -2), 0, &out).ok());
  for (int64_t i = 0; i < 16; ++i) CHECK(At(out, i) == 0);
  // factor 0: the sample as it is.
  REQUIRE(Apply("shot_noise", {{"factor", FloatAttr(0)}}, in, 0, &out).ok());
  CHECK(out.storage == in.storage);
}

TEST_CASE("noise operators name what is wrong") {
  const Sample in = Flat(DT_UINT8, 4, 4, 3, 1);
  Sample out;
  CHECK_THAT(std::string(Apply("gaussian_noise", {{"stddev", FloatAttr(-1)}},
                               in, 0, &out)
                             .message()),
             Catch::Contains("noise.gaussian: stddev -1 is negative"));
  CHECK_THAT(
      std::string(
          Apply("salt_and_pepper_noise", {{"prob", FloatAttr(2)}}, in, 0, &out)
              .message()),
      Catch::Contains("prob 2 and salt_vs_pepper 0.5 must each be in [0, 1]"));
  CHECK_THAT(
      std::string(Apply("shot_noise", {{"factor", FloatAttr(-3)}}, in, 0, &out)
                      .message()),
      Catch::Contains("noise.shot: factor -3 is negative"));
  Sample ints;
  const int64_t shape[] = {2, 2};
  ints.Reshape(DT_INT32, shape);
  CHECK_THAT(std::string(Apply("gaussian_noise", {}, ints, 0, &out).message()),
             Catch::Contains("takes uint8 or float32 samples, got int32"));
}

}  // namespace
}  // namespace actorflow::internal::pipeline
