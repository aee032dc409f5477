// DALI's augmentations (pipeline/augment.h, augment_ops.cc) against values
// worked out by hand, and per-sample arguments (pipeline/sample_args.h)
// drawn from each sample's own generator.
#include "pipeline/augment.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "actor/act_context.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "pipeline/sample_args.h"
#include "pipeline/sample_ops.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

Sample Image(DataType type, std::vector<int64_t> shape,
             const std::vector<double>& values) {
  Sample s;
  s.Reshape(type, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DT_UINT8) {
      s.storage[i] = static_cast<uint8_t>(values[i]);
    } else {
      s.as<float>()[i] = static_cast<float>(values[i]);
    }
  }
  return s;
}

std::vector<double> Values(const Sample& s) {
  std::vector<double> v;
  const int64_t n = ShapeElemCnt(s.shape);
  const SampleRef ref = s.ref();
  for (int64_t i = 0; i < n; ++i) {
    v.push_back(s.type == DT_UINT8 ? ref.data[i] : ref.as<float>()[i]);
  }
  return v;
}

std::unique_ptr<SampleOp> MakeOp(const std::string& name,
                                 const std::map<std::string, AttrValue>& attrs,
                                 absl::Status* init = nullptr) {
  auto op = MakeSampleOp(name);
  REQUIRE(op.ok());
  TaskProto task = KernelTask("pipeline." + name, attrs);
  KernelInitContext ctx = MakeInitContext(task, {}, {});
  absl::Status ok = (*op)->Init(ctx);
  if (init != nullptr) {
    *init = ok;
  } else {
    INFO(ok.ToString());
    REQUIRE(ok.ok());
  }
  return std::move(*op);
}

TEST_CASE("brightness_contrast follows DALI's formula, clamped for uint8") {
  Sample in = Image(DT_UINT8, {1, 3, 1}, {0, 128, 200});
  Sample out;
  // 1.5 * (128 + 2 * (v - 128)) + 0.1 * 255
  REQUIRE(BrightnessContrast(in.ref(), 1.5f, 0.1f, 2.0f, 128, &out).ok());
  CHECK(Values(out) == std::vector<double>{0, 218, 255});
  Sample f = Image(DT_FLOAT32, {1, 2, 1}, {0.25, 1.0});
  REQUIRE(BrightnessContrast(f.ref(), 1.0f, 0.0f, 0.5f, 0.5f, &out).ok());
  CHECK(Values(out)[0] == Approx(0.375));
  CHECK(Values(out)[1] == Approx(0.75));
}

TEST_CASE("hsv: identity, grey, value and hue turns") {
  Sample in = Image(DT_FLOAT32, {1, 2, 3}, {0.9, 0.2, 0.1, 0.3, 0.6, 0.8});
  Sample out;
  REQUIRE(ApplyColorMatrix(in.ref(), HsvMatrix(0, 1, 1), &out).ok());
  for (int i = 0; i < 6; ++i)
    CHECK(Values(out)[i] == Approx(Values(in)[i]).margin(2e-3));
  // Saturation 0: every channel the luma (0.299 R + 0.587 G + 0.114 B).
  REQUIRE(ApplyColorMatrix(in.ref(), HsvMatrix(0, 0, 1), &out).ok());
  const double luma = 0.299 * 0.9 + 0.587 * 0.2 + 0.114 * 0.1;
  for (int c = 0; c < 3; ++c)
    CHECK(Values(out)[c] == Approx(luma).margin(2e-3));
  REQUIRE(ApplyColorMatrix(in.ref(), HsvMatrix(0, 1, 0.5f), &out).ok());
  CHECK(Values(out)[0] == Approx(0.45).margin(2e-3));
  // Two half turns of hue are none.
  Sample half;
  REQUIRE(ApplyColorMatrix(in.ref(), HsvMatrix(180, 1, 1), &half).ok());
  CHECK(Values(half)[0] < 0.5);  // red's chroma turned the other way
  REQUIRE(ApplyColorMatrix(half.ref(), HsvMatrix(180, 1, 1), &out).ok());
  for (int i = 0; i < 6; ++i)
    CHECK(Values(out)[i] == Approx(Values(in)[i]).margin(5e-3));
  // color_twist = hsv, then brightness and contrast about the centre.
  const ColorMatrix twist = ColorTwistMatrix(0, 1, 1, 2.0f, 0.5f, 0.5f);
  REQUIRE(ApplyColorMatrix(in.ref(), twist, &out).ok());
  CHECK(Values(out)[0] == Approx(2.0 * (0.5 + 0.5 * (0.9 - 0.5))).margin(3e-3));
}

TEST_CASE("rotate and warp_affine move pixels where they belong") {
  // 2 x 3, pixel (y, x) = 10y + x + 1.
  Sample in = Image(DT_UINT8, {2, 3, 1}, {1, 2, 3, 11, 12, 13});
  int64_t h = 0, w = 0;
  RotatedSize(2, 3, 90, &h, &w);
  CHECK((h == 3 && w == 2));
  RotatedSize(2, 3, 45, &h, &w);
  CHECK((h == 4 && w == 5));  // 3.54 x 3.54, then the parities of 2 and 3
  RotatedSize(20, 30, 30, &h, &w);
  CHECK((h == 34 && w == 36));
  Sample out;
  // Counter-clockwise by 90: the right column becomes the top row.
  REQUIRE(Rotate(in.ref(), 90, 3, 2, {0}, &out).ok());
  CHECK(out.shape == SampleShape{3, 2, 1});
  CHECK(Values(out) == std::vector<double>{3, 13, 2, 12, 1, 11});
  REQUIRE(Rotate(in.ref(), 0, 2, 3, {0}, &out).ok());
  CHECK(Values(out) == Values(in));
  // A shift right by one column: the first column from outside (fill 7).
  const double shift[6] = {1, 0, -1, 0, 1, 0};
  REQUIRE(WarpAffine(in.ref(), shift, 2, 3, {7}, &out).ok());
  CHECK(Values(out) == std::vector<double>{7, 1, 2, 7, 11, 12});
  // Half a pixel: bilinear between neighbours, rounded half up.
  const double half[6] = {1, 0, 0.5, 0, 1, 0};
  REQUIRE(WarpAffine(in.ref(), half, 2, 2, {0}, &out).ok());
  CHECK(Values(out) == std::vector<double>{2, 3, 12, 13});
  CHECK_FALSE(WarpAffine(in.ref(), shift, 0, 3, {0}, &out).ok());
  CHECK_FALSE(WarpAffine(in.ref(), shift, 2, 3, {0, 0}, &out).ok());
}

TEST_CASE("erase, paste, gaussian_blur, transpose and one_hot") {
  Sample in = Image(DT_UINT8, {2, 3, 1}, {1, 2, 3, 11, 12, 13});
  Sample out;
  REQUIRE(Erase(in.ref(), {Region{1, 1, 5, 1}}, {9}, &out).ok());
  CHECK(Values(out) == std::vector<double>{1, 2, 3, 11, 9, 13});
  REQUIRE(Paste(in.ref(), 2.0, 1.0, 0.0, {5}, &out).ok());
  CHECK(out.shape == SampleShape{4, 6, 1});
  CHECK(Values(out)[12] == 1);   // row 2, column 0
  CHECK(Values(out)[20] == 13);  // row 3, column 2
  CHECK(Values(out)[3] == 5);
  CHECK_FALSE(Paste(in.ref(), 0.5, 0, 0, {0}, &out).ok());

  const std::vector<float> k = GaussianKernel(1.0, 5);
  double sum = 0;
  for (float v : k) sum += v;
  CHECK(sum == Approx(1.0));
  CHECK(k[2] / k[1] == Approx(std::exp(0.5)));
  // A delta at column 1 of a 1 x 5 row, blurred along x only: mirrored
  // without repeating the edge (dcb|abcd|cba), column -1 reads column 1.
  Sample delta = Image(DT_FLOAT32, {1, 5, 1}, {0, 1, 0, 0, 0});
  REQUIRE(GaussianBlur(delta.ref(), 0, 1.0, 1, 5, &out).ok());
  CHECK(Values(out)[0] == Approx(k[1] + k[3]));  // itself, and its mirror
  CHECK(Values(out)[1] == Approx(k[0] + k[2]));
  CHECK(Values(out)[2] == Approx(k[1]));
  CHECK(Values(out)[4] == Approx(0).margin(1e-7));
  Sample flat = Image(DT_UINT8, {4, 4, 1}, std::vector<double>(16, 77));
  REQUIRE(GaussianBlur(flat.ref(), 2, 2, 7, 7, &out).ok());
  CHECK(Values(out) == std::vector<double>(16, 77));
  CHECK_FALSE(GaussianBlur(flat.ref(), 1, 1, 4, 3, &out).ok());

  REQUIRE(ScaleShift(in.ref(), {0.5f}, {-1.0f}, &out).ok());
  CHECK(out.type == DT_FLOAT32);
  CHECK(Values(out) == std::vector<double>{-0.5, 0, 0.5, 4.5, 5, 5.5});
  // One value per channel (the last axis).
  Sample rgb = Image(DT_UINT8, {1, 2, 3}, {1, 2, 3, 11, 12, 13});
  REQUIRE(ScaleShift(rgb.ref(), {1, 2, 3}, {0, 10, 20}, &out).ok());
  CHECK(Values(out) == std::vector<double>{1, 14, 29, 11, 34, 59});
  CHECK_THAT(std::string(ScaleShift(rgb.ref(), {1, 2}, {0}, &out).message()),
             Catch::Contains("2 values for samples of [1, 2, 3]"));

  REQUIRE(Transpose(in.ref(), {2, 0, 1}, &out).ok());
  CHECK(out.shape == SampleShape{1, 2, 3});
  REQUIRE(Transpose(in.ref(), {1, 0, 2}, &out).ok());
  CHECK(Values(out) == std::vector<double>{1, 11, 2, 12, 3, 13});
  CHECK_FALSE(Transpose(in.ref(), {0, 0, 1}, &out).ok());

  Sample labels;
  const int64_t shape[] = {2};
  labels.Reshape(DT_INT32, shape);
  labels.as<int32_t>()[0] = 2;
  labels.as<int32_t>()[1] = 0;
  REQUIRE(OneHot(labels.ref(), 3, 1, -1, &out).ok());
  CHECK(out.shape == SampleShape{2, 3});
  CHECK(Values(out) == std::vector<double>{-1, -1, 1, 1, -1, -1});
  CHECK_FALSE(OneHot(labels.ref(), 2, 1, 0, &out).ok());
}

TEST_CASE("water and sphere read each pixel from their displaced point") {
  // A 6 x 9 ramp, pixel (y, x) = 10 y + x, so a value names its source.
  std::vector<double> ramp;
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 9; ++x) ramp.push_back(10 * y + x);
  }
  const Sample image = Image(DT_UINT8, {6, 9, 1}, ramp);
  Sample out;
  // Waves of amplitude 1.5 and a period of 8 pixels: each output pixel
  // holds the input pixel under its displaced point, or the fill (77).
  Wave x_wave{1.5f, 0.785398f, 0.3f}, y_wave{1.5f, 0.785398f, 0};
  REQUIRE(Water(image.ref(), x_wave, y_wave, false, {77}, &out).ok());
  REQUIRE(out.shape == image.shape);
  int filled = 0;
  for (int y = 0; y < 6; ++y) {
    for (int x = 0; x < 9; ++x) {
      const float px = x + 1.5f * std::sin(0.785398f * y + 0.3f);
      const float py = y + 1.5f * std::cos(0.785398f * x);
      const int sx = static_cast<int>(std::floor(px));
      const int sy = static_cast<int>(std::floor(py));
      const bool inside = sx >= 0 && sy >= 0 && sx < 9 && sy < 6;
      INFO("(" << y << ", " << x << ") reads (" << py << ", " << px << ")");
      CHECK(out.storage[y * 9 + x] == (inside ? 10 * sy + sx : 77));
      filled += !inside;
    }
  }
  CHECK(filled > 0);  // the waves reach past the border
  // No amplitude: the image itself when nearest. Water's points are pixel
  // corners (DALI's), so bilinear reads between four pixels: inside, the
  // ramp's 10 y + x - 5.5, rounded half up.
  REQUIRE(Water(image.ref(), {0, 1, 0}, {0, 1, 0}, false, {}, &out).ok());
  CHECK(out.storage == image.storage);
  REQUIRE(Water(image.ref(), {0, 1, 0}, {0, 1, 0}, true, {}, &out).ok());
  for (int y = 1; y < 6; ++y) {
    for (int x = 1; x < 9; ++x) CHECK(out.storage[y * 9 + x] == 10 * y + x - 5);
  }
  // sphere: the centre stays, the corners (radius beyond the half side)
  // read from outside.
  std::vector<double> big;
  for (int i = 0; i < 20 * 20; ++i) big.push_back(i % 251);
  const Sample square = Image(DT_UINT8, {20, 20, 1}, big);
  REQUIRE(Sphere(square.ref(), false, {5}, &out).ok());
  CHECK(out.storage[10 * 20 + 10] == square.storage[10 * 20 + 10]);
  CHECK(out.storage[0] == 5);
  CHECK(out.storage[20 * 20 - 1] == 5);
  // Off-centre pixel (y 12, x 15): its centre (2.5, 5.5) from the middle,
  // r = |(2.5, 5.5)| / 10, read at the middle + r times that.
  const float r = std::sqrt(2.5f * 2.5f + 5.5f * 5.5f) / 10;
  const int sy = static_cast<int>(std::floor(10 + r * 2.5f));
  const int sx = static_cast<int>(std::floor(10 + r * 5.5f));
  CHECK(out.storage[12 * 20 + 15] == square.storage[sy * 20 + sx]);
  // The ops: a mask of 0 passes the image; sphere takes float32 too.
  Sample passed;
  SampleRng rng(1, 2, 3, 4);
  REQUIRE(MakeOp("water", {{"mask", FloatAttr(0)}})
              ->Apply(image.ref(), &rng, &passed)
              .ok());
  CHECK(passed.storage == image.storage);
  const Sample floats =
      Image(DT_FLOAT32, {4, 4, 2}, std::vector<double>(32, 1));
  REQUIRE(MakeOp("sphere", {{"linear", BoolAttr(true)}})
              ->Apply(floats.ref(), &rng, &out)
              .ok());
  CHECK(out.type == DT_FLOAT32);
  CHECK(out.shape == floats.shape);
}

TEST_CASE("jpeg_compression_distortion is an encode and decode at quality") {
  std::vector<double> noise;
  uint32_t state = 7;
  for (int i = 0; i < 32 * 48 * 3; ++i) {
    state = state * 1664525u + 1013904223u;
    noise.push_back((state >> 24) & 0xFF);
  }
  const Sample image = Image(DT_UINT8, {32, 48, 3}, noise);
  auto error_at = [&](int quality, Sample* out) {
    REQUIRE(JpegCompressionDistortion(image.ref(), quality, out).ok());
    REQUIRE(out->shape == image.shape);
    double sum = 0;
    for (size_t i = 0; i < image.storage.size(); ++i) {
      sum += std::abs(int{out->storage[i]} - int{image.storage[i]});
    }
    return sum / image.storage.size();
  };
  Sample low, high, clamped;
  const double low_error = error_at(5, &low);
  const double high_error = error_at(95, &high);
  CHECK(high_error < low_error);
  // The same bytes as encoding and decoding by hand.
  auto encoded = EncodeJpeg(image.ref(), 5);
  REQUIRE(encoded.ok());
  Sample by_hand;
  REQUIRE(DecodeImage(absl::MakeConstSpan(
                          reinterpret_cast<const uint8_t*>(encoded->data()),
                          encoded->size()),
                      3, &by_hand)
              .ok());
  CHECK(by_hand.storage == low.storage);
  // Out-of-range qualities clamp to 1 and 100.
  error_at(0, &clamped);
  Sample one;
  error_at(1, &one);
  CHECK(clamped.storage == one.storage);
  // Only RGB bytes.
  Sample out;
  const Sample gray = Image(DT_UINT8, {4, 4, 1}, {});
  CHECK_THAT(
      std::string(JpegCompressionDistortion(gray.ref(), 50, &out).message()),
      Catch::Contains("wants an RGB uint8 image"));
}

TEST_CASE("arith: element by element, broadcast as NumPy") {
  const Sample a = Image(DT_UINT8, {1, 2, 2}, {1, 2, 3, 4});
  const Sample b = Image(DT_FLOAT32, {1, 2, 2}, {0.5, 2, -1, 8});
  Sample out;
  REQUIRE(Arith(a.ref(), b.ref(), ArithOp::kSub, &out).ok());
  CHECK(out.type == DT_FLOAT32);
  CHECK(Values(out) == std::vector<double>{0.5, 0, 4, -4});
  REQUIRE(Arith(a.ref(), b.ref(), ArithOp::kDiv, &out).ok());
  CHECK(Values(out) == std::vector<double>{2, 1, -3, 0.5});
  // A single value meets every element, on either side.
  const Sample coin = Image(DT_UINT8, {1}, {3});
  REQUIRE(Arith(coin.ref(), a.ref(), ArithOp::kMul, &out).ok());
  CHECK(out.shape == a.shape);
  CHECK(Values(out) == std::vector<double>{3, 6, 9, 12});
  REQUIRE(Arith(a.ref(), coin.ref(), ArithOp::kAdd, &out).ok());
  CHECK(Values(out) == std::vector<double>{4, 5, 6, 7});
  // An empty sample against a single value stays empty.
  const Sample empty = Image(DT_UINT8, {0, 3}, {});
  REQUIRE(Arith(empty.ref(), coin.ref(), ArithOp::kAdd, &out).ok());
  CHECK(out.shape == empty.shape);
  // Broadcast as NumPy: [1, 2, 2] + [2, 2, 1] is [2, 2, 2], out[i][j][k]
  // = a[0][j][k] + other[i][j][0].
  const Sample other = Image(DT_UINT8, {2, 2, 1}, {10, 20, 30, 40});
  REQUIRE(Arith(a.ref(), other.ref(), ArithOp::kAdd, &out).ok());
  CHECK(out.shape == SampleShape{2, 2, 2});
  CHECK(Values(out) == std::vector<double>{11, 12, 23, 24, 31, 32, 43, 44});
  // An image times a one-channel mask, and per channel.
  const Sample image = Image(DT_UINT8, {1, 2, 3}, {1, 2, 3, 4, 5, 6});
  const Sample mask = Image(DT_UINT8, {1, 2, 1}, {0, 2});
  REQUIRE(Arith(image.ref(), mask.ref(), ArithOp::kMul, &out).ok());
  CHECK(Values(out) == std::vector<double>{0, 0, 0, 8, 10, 12});
  const Sample channels = Image(DT_FLOAT32, {3}, {1, 10, 100});
  REQUIRE(Arith(image.ref(), channels.ref(), ArithOp::kMul, &out).ok());
  CHECK(out.shape == image.shape);
  CHECK(Values(out) == std::vector<double>{1, 20, 300, 4, 50, 600});
  const Sample wrong = Image(DT_UINT8, {3, 2}, {1, 2, 3, 4, 5, 6});
  CHECK_THAT(
      std::string(Arith(a.ref(), wrong.ref(), ArithOp::kAdd, &out).message()),
      Catch::Contains("samples of [1, 2, 2] and [3, 2]: axis -2 has extents "
                      "2 and 3 (broadcasting as NumPy"));
  CHECK(ParseArithOp("mul").value() == ArithOp::kMul);
  CHECK(ParseArithOp("atan2").value() == ArithOp::kAtan2);
  CHECK_FALSE(ParseArithOp("mod").ok());
  // The math module's functions of two nodes.
  const Sample base = Image(DT_FLOAT32, {3}, {2, 9, -1});
  const Sample power = Image(DT_FLOAT32, {3}, {3, 0.5, 2});
  REQUIRE(Arith(base.ref(), power.ref(), ArithOp::kPow, &out).ok());
  CHECK(Values(out) == std::vector<double>{8, 3, 1});
  REQUIRE(Arith(base.ref(), power.ref(), ArithOp::kMin, &out).ok());
  CHECK(Values(out) == std::vector<double>{2, 0.5, -1});
  REQUIRE(Arith(base.ref(), power.ref(), ArithOp::kMax, &out).ok());
  CHECK(Values(out) == std::vector<double>{3, 9, 2});
}

TEST_CASE("per-sample arguments: drawn from the sample's generator") {
  const uint64_t seed = testing::TestSeed("per-sample arguments");
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  auto arg = [](const std::map<std::string, AttrValue>& attrs) {
    ScalarArg a;
    TaskProto task = KernelTask("pipeline.rotate", attrs);
    KernelInitContext ctx = MakeInitContext(task, {}, {});
    absl::Status ok = a.Init(ctx, "angle", 0);
    return std::make_pair(ok, a);
  };
  auto [ok, uniform] = arg({{"angle_uniform", FloatListAttr({-10, 10})}});
  REQUIRE(ok.ok());
  auto normal = arg({{"angle_normal", FloatListAttr({5, 2})}}).second;
  auto coin = arg({{"angle_coin_flip", FloatAttr(0.25)}}).second;
  double sum = 0, sq = 0, heads = 0;
  for (int i = 0; i < 4000; ++i) {
    SampleRng a(seed, 3, 1, i), b(seed, 3, 1, i);
    const double u = uniform.Draw(&a);
    CHECK(u == uniform.Draw(&b));
    CHECK((u >= -10 && u <= 10));
    const double n = normal.Draw(&a);
    sum += n;
    sq += n * n;
    heads += coin.Draw(&a);
  }
  const double mean = sum / 4000, var = sq / 4000 - mean * mean;
  CHECK(mean == Approx(5).margin(0.15));
  CHECK(std::sqrt(var) == Approx(2).margin(0.15));
  CHECK(heads / 4000 == Approx(0.25).margin(0.03));
  // One random value given to two operators (a stream): the same draw
  // from each operator's own generator; inverted, its negation.
  auto shared = arg({{"angle_uniform", FloatListAttr({0, 10})},
                     {"angle_stream", IntAttr(7)}})
                    .second;
  auto negated = arg({{"angle_uniform", FloatListAttr({-10, 0})},
                      {"angle_stream", IntAttr(7 | kInvertedStream)}})
                     .second;
  for (int i = 0; i < 50; ++i) {
    SampleRng op1(seed, 1, 0, i), op2(seed, 2, 0, i), op3(seed, 3, 0, i);
    const double a = shared.Draw(&op1);
    CHECK(a == shared.Draw(&op2));
    CHECK(negated.Draw(&op3) == Approx(-a).margin(1e-9));
    SampleRng p1(seed, 1, 0, i), p2(seed, 2, 0, i);
    CHECK(UniformFor(&p1, 7) == UniformFor(&p2, 7));
  }
  CHECK(uniform.varies());
  CHECK_FALSE(arg({}).second.varies());
  CHECK_FALSE(
      arg({{"angle", FloatAttr(3)}, {"angle_uniform", FloatListAttr({0, 1})}})
          .first.ok());
  CHECK_FALSE(arg({{"angle_uniform", FloatListAttr({2, 1})}}).first.ok());
  CHECK_FALSE(arg({{"angle_coin_flip", FloatAttr(1.5)}}).first.ok());
}

TEST_CASE("operators infer the largest sample they can make") {
  const SampleSpec photo{DT_UINT8, {300, 400, 3}};
  auto rotate = MakeOp("rotate", {{"angle_uniform", FloatListAttr({-10, 10})}});
  CHECK(rotate->Infer(photo)->max_shape == std::vector<int64_t>{501, 501, 3});
  // Every angle's size fits that bound (20 x 30: the diagonal is 36.06,
  // and parity can make a side 38).
  const std::vector<int64_t> bound =
      rotate->Infer(SampleSpec{DT_UINT8, {20, 30, 3}})->max_shape;
  for (int tenth = 0; tenth < 3600; ++tenth) {
    int64_t h = 0, w = 0;
    RotatedSize(20, 30, tenth / 10.0, &h, &w);
    REQUIRE(h <= bound[0]);
    REQUIRE(w <= bound[1]);
  }
  auto quarter = MakeOp("rotate", {{"angle", FloatAttr(90)}});
  CHECK(quarter->Infer(photo)->max_shape == std::vector<int64_t>{401, 301, 3});
  // Any smaller image turned by a fixed angle fits too.
  auto thirty = MakeOp("rotate", {{"angle", FloatAttr(30)}});
  const std::vector<int64_t> box =
      thirty->Infer(SampleSpec{DT_UINT8, {20, 30, 3}})->max_shape;
  for (int64_t h = 1; h <= 20; ++h) {
    for (int64_t w = 1; w <= 30; ++w) {
      int64_t oh = 0, ow = 0;
      RotatedSize(h, w, 30, &oh, &ow);
      REQUIRE(oh <= box[0]);
      REQUIRE(ow <= box[1]);
    }
  }
  auto keep = MakeOp("rotate",
                     {{"angle", FloatAttr(30)}, {"keep_size", BoolAttr(true)}});
  CHECK(keep->Infer(photo)->max_shape == photo.max_shape);
  auto paste = MakeOp("paste", {{"ratio_uniform", FloatListAttr({1, 2})}});
  CHECK(paste->Infer(photo)->max_shape == std::vector<int64_t>{600, 800, 3});
  auto slice = MakeOp("slice", {{"rel_shape", FloatListAttr({0.5, 0.5})}});
  CHECK(slice->Infer(photo)->max_shape == std::vector<int64_t>{150, 200, 3});
  auto shapes = MakeOp("shapes", {});
  CHECK(shapes->Infer(photo)->max_shape == std::vector<int64_t>{3});
  CHECK(shapes->Infer(photo)->type == DT_INT64);
  Sample sizes;
  SampleRng draws(1, 2, 3, 4);
  Sample small = Image(DT_UINT8, {2, 5, 3}, {});
  REQUIRE(shapes->Apply(small.ref(), &draws, &sizes).ok());
  CHECK(std::vector<int64_t>(sizes.as<int64_t>(), sizes.as<int64_t>() + 3) ==
        std::vector<int64_t>{2, 5, 3});
  // Colour spaces: the channels the image type wants, and what comes out.
  auto to_gray = MakeOp(
      "color_space_conversion",
      {{"image_type", StringAttr("bgr")}, {"output_type", StringAttr("gray")}});
  CHECK(to_gray->Infer(photo)->max_shape == std::vector<int64_t>{300, 400, 1});
  CHECK_FALSE(to_gray->Infer(SampleSpec{DT_UINT8, {300, 400, 1}}).ok());
  Sample bgr = Image(DT_UINT8, {1, 2, 3}, {10, 20, 30, 255, 0, 100});
  Sample gray;
  REQUIRE(to_gray->Apply(bgr.ref(), &draws, &gray).ok());
  // B 10, G 20, R 30: 0.299 * 30 + 0.587 * 20 + 0.114 * 10 = 21.85; B 255,
  // G 0, R 100: 58.97.
  CHECK(std::vector<uint8_t>(gray.as<uint8_t>(), gray.as<uint8_t>() + 2) ==
        std::vector<uint8_t>{22, 59});
  absl::Status bad_space;
  MakeOp(
      "color_space_conversion",
      {{"image_type", StringAttr("hsv")}, {"output_type", StringAttr("rgb")}},
      &bad_space);
  CHECK(absl::StrContains(bad_space.message(), "image_type"));
  // An encoded image's shape from its header: JPEG and PNG, RGB and gray.
  auto peek = MakeOp("peek_image_shape", {});
  auto peek_gray = MakeOp("peek_image_shape", {{"channels", IntAttr(1)}});
  CHECK(peek->Infer(SampleSpec{DT_UINT8, {-1}})->max_shape ==
        std::vector<int64_t>{3});
  CHECK_FALSE(peek->Infer(photo).ok());  // decoded already
  Sample odd = Image(DT_UINT8, {7, 13, 3}, {});
  auto jpeg = EncodeJpeg(odd.ref(), 90);
  auto png = EncodePng(odd.ref());
  REQUIRE(jpeg.ok());
  REQUIRE(png.ok());
  for (const std::string* encoded : {&*jpeg, &*png}) {
    const int64_t bytes[] = {static_cast<int64_t>(encoded->size())};
    const SampleRef file{DT_UINT8, bytes,
                         reinterpret_cast<const uint8_t*>(encoded->data()),
                         bytes[0]};
    Sample shape;
    REQUIRE(peek->Apply(file, &draws, &shape).ok());
    CHECK(std::vector<int64_t>(shape.as<int64_t>(), shape.as<int64_t>() + 3) ==
          std::vector<int64_t>{7, 13, 3});
    REQUIRE(peek_gray->Apply(file, &draws, &shape).ok());
    CHECK(shape.as<int64_t>()[2] == 1);
  }
  const std::string junk = "not an image";
  const int64_t junk_bytes[] = {static_cast<int64_t>(junk.size())};
  Sample none;
  CHECK_FALSE(
      peek->Apply(SampleRef{DT_UINT8, junk_bytes,
                            reinterpret_cast<const uint8_t*>(junk.data()),
                            junk_bytes[0]},
                  &draws, &none)
          .ok());
  absl::Status bad_channels;
  MakeOp("peek_image_shape", {{"channels", IntAttr(4)}}, &bad_channels);
  CHECK(absl::StrContains(bad_channels.message(), "channels"));
  // math: int8 kept and saturated by abs, clamped in range; float32 from
  // sqrt; an unknown fn or crossed bounds named.
  Sample signed_values = Image(DT_INT8, {1, 1, 4}, {});
  const int8_t raw_values[] = {-128, -5, 7, 100};
  std::memcpy(signed_values.storage.data(), raw_values, 4);
  auto absolute = MakeOp("math", {{"fn", StringAttr("abs")}});
  CHECK(absolute->Infer(SampleSpec{DT_INT8, {1, 1, 4}})->type == DT_INT8);
  Sample math_out;
  REQUIRE(absolute->Apply(signed_values.ref(), &draws, &math_out).ok());
  CHECK(std::vector<int8_t>(math_out.as<int8_t>(), math_out.as<int8_t>() + 4) ==
        std::vector<int8_t>{127, 5, 7, 100});
  auto clamp = MakeOp("math", {{"fn", StringAttr("clamp")},
                               {"lo", FloatAttr(-6)},
                               {"hi", FloatAttr(50)}});
  REQUIRE(clamp->Apply(signed_values.ref(), &draws, &math_out).ok());
  CHECK(std::vector<int8_t>(math_out.as<int8_t>(), math_out.as<int8_t>() + 4) ==
        std::vector<int8_t>{-6, -5, 7, 50});
  auto root = MakeOp("math", {{"fn", StringAttr("sqrt")}});
  CHECK(root->Infer(SampleSpec{DT_INT8, {4}})->type == DT_FLOAT32);
  REQUIRE(root->Apply(signed_values.ref(), &draws, &math_out).ok());
  CHECK(math_out.as<float>()[3] == 10.0f);
  absl::Status bad_math;
  MakeOp("math", {{"fn", StringAttr("sqr")}}, &bad_math);
  CHECK(absl::StrContains(bad_math.message(), "attr 'fn': one of clamp, abs"));
  MakeOp(
      "math",
      {{"fn", StringAttr("clamp")}, {"lo", FloatAttr(2)}, {"hi", FloatAttr(1)}},
      &bad_math);
  CHECK(absl::StrContains(bad_math.message(), "attrs 'lo' 2 > 'hi' 1"));
  MakeOp("math", {{"fn", StringAttr("pow")}}, &bad_math);
  CHECK(absl::StrContains(bad_math.message(), "value"));
  auto hot = MakeOp("one_hot", {{"num_classes", IntAttr(10)}});
  CHECK(hot->Infer(SampleSpec{DT_INT32, {}})->max_shape ==
        std::vector<int64_t>{10});
  CHECK_FALSE(hot->Infer(photo).ok() == false);  // uint8 is an integer
  auto flip = MakeOp("transpose", {{"perm", IntListAttr({2, 0, 1})}});
  CHECK(flip->Infer(photo)->max_shape == std::vector<int64_t>{3, 300, 400});
  auto reshape = MakeOp("reshape", {{"shape", IntListAttr({-1, 3})}});
  CHECK(reshape->Infer(photo)->max_shape == std::vector<int64_t>{120000, 3});
  absl::Status init;
  MakeOp("paste", {{"ratio", FloatAttr(0.5)}}, &init);
  CHECK(absl::StrContains(init.message(), "ratio"));
  MakeOp("one_hot", {}, &init);
  CHECK(absl::StrContains(init.message(), "num_classes"));
  MakeOp("warp_affine", {{"matrix", FloatListAttr({1, 0, 0})}}, &init);
  CHECK(absl::StrContains(init.message(), "matrix"));
}

TEST_CASE("crop: a window at DALI's normalized anchor") {
  // 5x7, one channel, pixel (y, x) = 10y + x; 2x2 windows leave 3 rows and
  // 5 columns of room.
  std::vector<double> v;
  for (int y = 0; y < 5; ++y) {
    for (int x = 0; x < 7; ++x) v.push_back(10 * y + x);
  }
  Sample in = Image(DT_UINT8, {5, 7, 1}, v);
  Sample out;
  SampleRng rng(1, 2, 3, 4);
  auto at = [&](std::vector<double> pos) {
    auto op = MakeOp("crop", {{"size", IntListAttr({2, 2})},
                              {"pos", FloatListAttr(std::move(pos))}});
    REQUIRE(op->Apply(in.ref(), &rng, &out).ok());
    return Values(out)[0];  // the window's first pixel: 10y + x
  };
  CHECK(at({0.5, 0.5}) == 23);  // roundf(1.5) = 2, roundf(2.5) = 3
  CHECK(at({0.0, 1.0}) == 5);
  CHECK(at({0.9, 0.1}) == 31);  // 2.7 and 0.5 rounded: 3 and 1
  auto centred = MakeOp("crop", {{"size", IntListAttr({2, 2})}});
  REQUIRE(centred->Apply(in.ref(), &rng, &out).ok());
  CHECK(Values(out)[0] == 12);  // without pos: rounded down
  absl::Status init;
  MakeOp("crop",
         {{"size", IntListAttr({2, 2})}, {"pos", FloatListAttr({1.5, 0})}},
         &init);
  CHECK(absl::StrContains(init.message(), "attr 'pos'"));
  MakeOp("crop", {{"size", IntListAttr({2, 2})}, {"pos", FloatListAttr({0.5})}},
         &init);
  CHECK(absl::StrContains(init.message(), "[y, x]"));
  MakeOp("crop",
         {{"size", IntListAttr({2, 2})},
          {"pos", FloatListAttr({0.5, 0.5})},
          {"random", BoolAttr(true)}},
         &init);
  CHECK(absl::StrContains(init.message(), "'random' false"));
}

TEST_CASE("resize: nearest neighbour as DALI's INTERP_NN") {
  // 3 x 5, two float channels: (y, x) -> (10y + x, -(10y + x)).
  std::vector<double> v;
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 5; ++x) {
      v.push_back(10 * y + x);
      v.push_back(-(10 * y + x));
    }
  }
  Sample in = Image(DT_FLOAT32, {3, 5, 2}, v);
  Sample out;
  // Down to 2 x 3: rows floor((i + .5) * 1.5) = 0, 2; columns floor((j +
  // .5) * 5 / 3) = 0, 2, 4. Up to 4 x 7: rows 0, 1, 1, 2 (0.375, 1.125,
  // 1.875, 2.625); columns 0, 1, 1, 2, 3, 3, 4 (0.36, 1.07, 1.79, 2.5,
  // 3.21, 3.93, 4.64).
  REQUIRE(ResizeNearest(in.ref(), 2, 3, &out).ok());
  CHECK(out.shape == SampleShape{2, 3, 2});
  const float* got = out.as<float>();
  CHECK(std::vector<float>(got, got + 12) ==
        std::vector<float>{0, 0, 2, -2, 4, -4, 20, -20, 22, -22, 24, -24});
  REQUIRE(ResizeNearest(in.ref(), 4, 7, &out).ok());
  got = out.as<float>();
  std::vector<float> firsts;
  for (int y = 0; y < 4; ++y) firsts.push_back(got[y * 14]);
  CHECK(firsts == std::vector<float>{0, 10, 10, 20});
  std::vector<float> row;
  for (int x = 0; x < 7; ++x) row.push_back(got[x * 2]);
  CHECK(row == std::vector<float>{0, 1, 1, 2, 3, 3, 4});
  CHECK_FALSE(ResizeNearest(in.ref(), 0, 3, &out).ok());

  // The op: attr interp "nn"; "linear" by default.
  auto nn = MakeOp(
      "resize", {{"size", IntListAttr({2, 3})}, {"interp", StringAttr("nn")}});
  SampleRng rng(1, 2, 3, 4);
  REQUIRE(nn->Apply(in.ref(), &rng, &out).ok());
  CHECK(out.as<float>()[2] == 2);
  absl::Status init;
  MakeOp("resize",
         {{"size", IntListAttr({2, 3})}, {"interp", StringAttr("cubic")}},
         &init);
  CHECK(absl::StrContains(init.message(), "attr 'interp'"));
}

TEST_CASE("table_rows: a sample's row of the table, exactly, or an error") {
  auto floats = MakeOp("table_rows", {{"values", FloatListAttr({1.5, 2, 3, 4,
                                                                5, 6, 7, 8})},
                                      {"offsets", IntListAttr({0, 0, 8})},
                                      {"row_width", IntAttr(4)}});
  auto spec = floats->Infer(SampleSpec{DT_INT32, {}});
  REQUIRE(spec.ok());
  CHECK(spec->type == DT_FLOAT32);
  CHECK(spec->max_shape == std::vector<int64_t>{2, 4});
  Sample index = Image(DT_UINT8, {1}, {1});
  Sample out;
  REQUIRE(floats->Apply(index.ref(), nullptr, &out).ok());
  CHECK(std::vector<int64_t>(out.shape.begin(), out.shape.end()) ==
        std::vector<int64_t>{2, 4});
  CHECK(Values(out) == std::vector<double>{1.5, 2, 3, 4, 5, 6, 7, 8});
  index.storage[0] = 0;  // an empty row: [0, 4]
  REQUIRE(floats->Apply(index.ref(), nullptr, &out).ok());
  CHECK(out.shape[0] == 0);
  index.storage[0] = 2;
  absl::Status past = floats->Apply(index.ref(), nullptr, &out);
  CHECK(absl::StrContains(past.message(), "row 2 is not in the table's 2"));
  CHECK(!floats->Infer(SampleSpec{DT_FLOAT32, {}}).ok());
  // Ints stay exact beyond float32's 2^24.
  auto ints = MakeOp("table_rows", {{"int_values", IntListAttr({16777217})},
                                    {"offsets", IntListAttr({0, 1})}});
  index.storage[0] = 0;
  REQUIRE(ints->Apply(index.ref(), nullptr, &out).ok());
  CHECK(out.type == DT_INT32);
  CHECK(out.as<int32_t>()[0] == 16777217);
  absl::Status init;
  MakeOp("table_rows", {{"values", FloatListAttr({1, 2, 3})},
                        {"offsets", IntListAttr({0, 2, 3})},
                        {"row_width", IntAttr(2)}},
         &init);
  CHECK(absl::StrContains(init.message(), "row 1 has 1 values"));
  MakeOp("table_rows", {{"values", FloatListAttr({1})},
                        {"offsets", IntListAttr({0, 2})}},
         &init);
  CHECK(absl::StrContains(init.message(), "attr 'offsets'"));
}

TEST_CASE("bb_flip takes float32 boxes of four coordinates") {
  auto flip = MakeOp("bb_flip", {{"ltrb", BoolAttr(true)}});
  CHECK(!flip->Infer(SampleSpec{DT_UINT8, {4, 4}}).ok());
  CHECK(!flip->Infer(SampleSpec{DT_FLOAT32, {4, 3}}).ok());
  Sample boxes = Image(DT_FLOAT32, {1, 4}, {0.25, 0.5, 0.5, 1});
  Sample out;
  SampleRng rng(1, 2, 0, 0);
  REQUIRE(flip->Apply(boxes.ref(), &rng, &out).ok());
  CHECK(Values(out) == std::vector<double>{0.5, 0.5, 0.75, 1});
  Sample odd = Image(DT_FLOAT32, {2, 3}, {0, 0, 0, 0, 0, 0});
  CHECK(!flip->Apply(odd.ref(), &rng, &out).ok());
}

}  // namespace
}  // namespace actorflow::internal::pipeline
