// The pipeline's operator functions on real data: Fashion-MNIST images
// (Debian's dataset-fashion-mnist) encoded and decoded with libjpeg-turbo
// and libpng, corrupt and truncated files, and the image operators checked
// against values worked out by hand.
#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>

#include "pipeline/dataset.h"
#include "pipeline/fixtures.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "pipeline/resample.h"
#include "tests/test_util.h"

namespace actorflow::internal::pipeline {
namespace {

namespace fs = std::filesystem;

// Fashion-MNIST test image `i` as uint8 [28, 28, 1].
Sample FashionImage(int64_t i) {
  static const IdxArray images = [] {
    auto read = ReadIdx(FashionMnistDir() + "/t10k-images-idx3-ubyte.gz");
    REQUIRE(read.ok());
    return *read;
  }();
  Sample s;
  const int64_t shape[] = {28, 28, 1};
  s.Reshape(DT_UINT8, shape);
  std::copy_n(images.data.data() + i * 784, 784, s.storage.data());
  return s;
}

Sample Values(DataType type, std::vector<int64_t> shape,
              std::vector<double> values) {
  Sample s;
  s.Reshape(type, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == DT_UINT8) s.as<uint8_t>()[i] = static_cast<uint8_t>(values[i]);
    if (type == DT_FLOAT32) s.as<float>()[i] = static_cast<float>(values[i]);
  }
  return s;
}

// A uint8 image of `shape`, each byte gen() % 256 in storage order.
Sample RandomBytes(std::mt19937_64& gen, const std::vector<int64_t>& shape) {
  Sample s;
  s.Reshape(DT_UINT8, shape);
  for (uint8_t& byte : s.storage) byte = static_cast<uint8_t>(gen() % 256);
  return s;
}

TEST_CASE("Fashion-MNIST IDX files read whole and header-only") {
  const std::string dir = FashionMnistDir();
  auto images = ReadIdx(dir + "/train-images-idx3-ubyte.gz");
  auto labels = ReadIdx(dir + "/train-labels-idx1-ubyte.gz");
  REQUIRE(images.ok());
  REQUIRE(labels.ok());
  CHECK(images->dims == std::vector<int64_t>{60000, 28, 28});
  CHECK(labels->dims == std::vector<int64_t>{60000});
  std::set<int> classes(labels->data.begin(), labels->data.end());
  CHECK(classes == std::set<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  auto head = ReadIdxHeader(dir + "/t10k-images-idx3-ubyte.gz");
  REQUIRE(head.ok());
  CHECK(*head == std::vector<int64_t>{10000, 28, 28});

  auto missing = ReadIdx(dir + "/no-such-file.gz");
  CHECK(absl::IsNotFound(missing.status()));
  const std::string bad = testing::TestTempDir("idx") + "/bad.idx";
  std::ofstream(bad) << "not an idx file";
  auto wrong = ReadIdx(bad);
  REQUIRE_FALSE(wrong.ok());
  CHECK_THAT(std::string(wrong.status().message()),
             Catch::Contains("not an IDX file"));
}

TEST_CASE("PNG round-trips exactly and JPEG closely, gray and RGB") {
  Sample image = FashionImage(7);
  auto png = EncodePng(image.ref());
  REQUIRE(png.ok());
  Sample back;
  auto bytes = [](const std::string& s) {
    return absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()),
                               s.size());
  };
  REQUIRE(DecodeImage(bytes(*png), 1, &back).ok());
  CHECK(back.shape == SampleShape{28, 28, 1});
  CHECK(back.storage == image.storage);
  // Gray to RGB: three equal channels.
  REQUIRE(DecodeImage(bytes(*png), 3, &back).ok());
  CHECK(back.shape == SampleShape{28, 28, 3});
  for (int p = 0; p < 784; ++p) {
    CHECK(back.storage[3 * p] == image.storage[p]);
    CHECK(back.storage[3 * p + 2] == image.storage[p]);
  }
  auto jpeg = EncodeJpeg(image.ref(), 95);
  REQUIRE(jpeg.ok());
  CHECK(SniffImageFormat(bytes(*jpeg)) == "jpeg");
  REQUIRE(DecodeImage(bytes(*jpeg), 1, &back).ok());
  CHECK(back.shape == SampleShape{28, 28, 1});
  double error = 0;
  for (int p = 0; p < 784; ++p) {
    error += std::abs(int{back.storage[p]} - int{image.storage[p]});
  }
  CHECK(error / 784 < 4.0);  // quality 95 on a real image
}

TEST_CASE("corrupt, truncated and foreign files are errors, not images") {
  Sample image = FashionImage(3);
  auto png = EncodePng(image.ref());
  auto jpeg = EncodeJpeg(image.ref(), 90);
  REQUIRE(png.ok());
  REQUIRE(jpeg.ok());
  auto decode = [](const std::string& s) {
    Sample out;
    return DecodeImage(
        absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(s.data()),
                            s.size()),
        3, &out);
  };
  absl::Status truncated_jpeg = decode(jpeg->substr(0, jpeg->size() / 2));
  CHECK(absl::IsDataLoss(truncated_jpeg));
  CHECK_THAT(std::string(truncated_jpeg.message()), Catch::Contains("JPEG"));
  absl::Status truncated_png = decode(png->substr(0, png->size() / 2));
  CHECK(absl::IsDataLoss(truncated_png));
  CHECK_THAT(std::string(truncated_png.message()), Catch::Contains("PNG"));
  // A JPEG with its entropy-coded data overwritten.
  std::string mangled = *jpeg;
  for (size_t i = mangled.size() / 2; i < mangled.size() - 2; ++i) {
    mangled[i] = static_cast<char>(0xFF);
  }
  CHECK_FALSE(decode(mangled).ok());
  absl::Status foreign = decode("GIF89a...");
  CHECK_THAT(std::string(foreign.message()),
             Catch::Contains("not a JPEG or PNG"));
  CHECK_FALSE(decode("").ok());
  Sample out;
  CHECK(absl::IsInvalidArgument(DecodeImage({}, 2, &out)));
}

TEST_CASE("bilinear resize: constant stays constant, ramps interpolate") {
  Sample flat = Values(DT_UINT8, {3, 5, 1}, std::vector<double>(15, 77));
  Sample out;
  REQUIRE(Resize(flat.ref(), 7, 4, &out).ok());
  CHECK(out.shape == SampleShape{7, 4, 1});
  for (uint8_t v : out.storage) CHECK(v == 77);
  // 1x2 -> 1x4, half-pixel centres: sources at -0.25, 0.25, 0.75, 1.25,
  // clamped to [0, 1]: 0, 25, 75, 100 of a 0..100 ramp.
  Sample ramp = Values(DT_FLOAT32, {1, 2, 1}, {0, 100});
  REQUIRE(Resize(ramp.ref(), 1, 4, &out).ok());
  const float* f = out.as<float>();
  CHECK(f[0] == Approx(0));
  CHECK(f[1] == Approx(25));
  CHECK(f[2] == Approx(75));
  CHECK(f[3] == Approx(100));
  // Same size: the image itself.
  Sample image = FashionImage(1);
  REQUIRE(Resize(image.ref(), 28, 28, &out).ok());
  CHECK(out.storage == image.storage);
  int64_t h = 0, w = 0;
  ShorterSideSize(300, 600, 256, &h, &w);
  CHECK((h == 256 && w == 512));
  ShorterSideSize(640, 480, 256, &h, &w);
  CHECK((h == 341 && w == 256));
  CHECK_FALSE(Resize(Values(DT_INT32, {2, 2, 1}, {}).ref(), 4, 4, &out).ok());
}

// The resize's definition, one output value at a time: half-pixel centres,
// two taps per axis, the width first, in float, rounded half up for bytes.
float BilinearAt(const Sample& in, int64_t height, int64_t width, int64_t y,
                 int64_t x, int64_t k) {
  auto tap = [](int64_t size, int64_t out_size, int64_t o, int64_t* lo,
                int64_t* hi) {
    double src = (o + 0.5) * (static_cast<double>(size) / out_size) - 0.5;
    src = std::max(0.0, std::min(src, static_cast<double>(size - 1)));
    *lo = static_cast<int64_t>(src);
    *hi = std::min(*lo + 1, size - 1);
    return static_cast<float>(src - *lo);
  };
  int64_t y0, y1, x0, x1;
  const float fy = tap(in.shape[0], height, y, &y0, &y1);
  const float fx = tap(in.shape[1], width, x, &x0, &x1);
  const int64_t c = in.shape[2];
  auto at = [&](int64_t r, int64_t col) {
    return static_cast<float>(in.storage[(r * in.shape[1] + col) * c + k]);
  };
  auto along = [&](int64_t r) {
    return at(r, x0) + (at(r, x1) - at(r, x0)) * fx;
  };
  return along(y0) + (along(y1) - along(y0)) * fy;
}

TEST_CASE("resize rules: DALI's modes, max_size, shorter and longer") {
  auto size = [](int64_t h, int64_t w, ResizeRule rule) {
    int64_t out_h = 0, out_w = 0;
    RuleSize(h, w, rule, &out_h, &out_w);
    return std::vector<int64_t>{out_h, out_w};
  };
  using M = ResizeMode;
  using V = std::vector<int64_t>;
  // One side asked for: default scales the other alike, stretch keeps it.
  CHECK(size(375, 500, {0, 250, M::kDefault}) == V{188, 250});
  CHECK(size(375, 500, {0, 250, M::kStretch}) == V{375, 250});
  CHECK(size(375, 500, {100, 0, M::kDefault}) == V{100, 133});
  // Both asked for: default and stretch give them.
  CHECK(size(375, 500, {224, 224, M::kDefault}) == V{224, 224});
  // DALI's own examples: 1280 x 720 into 640 x 480 not larger is 640 x
  // 360; 640 x 480 to 1920 x 1080 not smaller is 1920 x 1440; 1200 x 600
  // not smaller than 800 with max_size 1400 is 1400 x 700 (width x height
  // there, height x width here).
  CHECK(size(720, 1280, {480, 640, M::kNotLarger}) == V{360, 640});
  CHECK(size(480, 640, {1080, 1920, M::kNotSmaller}) == V{1440, 1920});
  CHECK(size(600, 1200, {800, 800, M::kNotSmaller, 1400, 1400}) ==
        V{700, 1400});
  // max_size in default mode limits each side on its own.
  CHECK(size(375, 500, {0, 1000, M::kDefault, 600, 0}) == V{600, 1000});
  // Longer side: not larger than a square.
  CHECK(size(375, 500, {256, 256, M::kNotLarger}) == V{192, 256});
  // Shorter side: not smaller than a square, ShorterSideSize exactly.
  for (int64_t h = 1; h < 700; h += 7) {
    for (int64_t w = 1; w < 700; w += 11) {
      int64_t want_h = 0, want_w = 0;
      ShorterSideSize(h, w, 256, &want_h, &want_w);
      INFO(h << " x " << w);
      REQUIRE(size(h, w, {256, 256, M::kNotSmaller}) == V{want_h, want_w});
    }
  }
  // Never below one pixel; nothing asked for keeps the size.
  CHECK(size(1000, 1, {0, 0.2, M::kDefault}) == V{200, 1});
  CHECK(size(10, 4000, {1, 0, M::kDefault}) == V{1, 400});
  CHECK(size(7, 9, {}) == V{7, 9});
  CHECK(ParseResizeMode("not_larger").value() == M::kNotLarger);
  CHECK_THAT(std::string(ParseResizeMode("fit").status().message()),
             Catch::Contains("got \"fit\""));
}

TEST_CASE("byte resize is its per-value definition exactly, any size") {
  const uint64_t seed = testing::TestSeed("byte resize");
  std::mt19937_64 gen(seed);
  auto below = [&](int64_t n) {
    return static_cast<int64_t>(gen() % static_cast<uint64_t>(n));
  };
  for (int round = 0; round < 60; ++round) {
    const int64_t c = round % 3 == 0 ? 1 : 3;
    const std::vector<int64_t> shape{1 + below(40), 1 + below(40), c};
    const Sample image = RandomBytes(gen, shape);
    const int64_t height = 1 + below(50), width = 1 + below(50);
    Sample out;
    REQUIRE(Resize(image.ref(), height, width, &out).ok());
    REQUIRE(out.shape == SampleShape{height, width, c});
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < width; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          const float value = BilinearAt(image, height, width, y, x, k);
          const int want =
              static_cast<int>(std::min(255.0f, std::max(0.0f, value)) + 0.5f);
          INFO("round " << round << " " << shape[0] << "x" << shape[1] << "x"
                        << c << " -> " << height << "x" << width << " at (" << y
                        << ", " << x << ", " << k << ")");
          REQUIRE(out.storage[(y * width + x) * c + k] == want);
        }
      }
    }
  }
}

TEST_CASE("antialiased resize: the widened triangle filter, exactly") {
  // Each output value by its definition, in double: source pixels whose
  // centres lie within `support` = max(scale, 1) of the output's centre,
  // weighted 1 - distance / support and normalized.
  auto reference = [](const Sample& in, int64_t height, int64_t width,
                      int64_t y, int64_t x, int64_t k) {
    auto weights = [](int64_t size, int64_t out_size, int64_t o) {
      const double scale = static_cast<double>(size) / out_size;
      const double support = std::max(scale, 1.0);
      const double center = (o + 0.5) * scale;
      std::vector<std::pair<int64_t, double>> w;
      double total = 0;
      for (int64_t i = 0; i < size; ++i) {
        const double d = std::abs(i + 0.5 - center) / support;
        if (d < 1) {
          w.emplace_back(i, 1 - d);
          total += 1 - d;
        }
      }
      for (auto& [i, v] : w) v /= total;
      return w;
    };
    double sum = 0;
    for (auto [sy, wy] : weights(in.shape[0], height, y)) {
      for (auto [sx, wx] : weights(in.shape[1], width, x)) {
        sum += wy * wx * in.storage[(sy * in.shape[1] + sx) * in.shape[2] + k];
      }
    }
    return sum;
  };
  const uint64_t seed = testing::TestSeed("antialiased resize");
  std::mt19937_64 gen(seed);
  for (int round = 0; round < 20; ++round) {
    const int64_t c = round % 2 == 0 ? 3 : 1;
    const int64_t h = 10 + static_cast<int64_t>(gen() % 40);
    const int64_t w = 10 + static_cast<int64_t>(gen() % 40);
    std::vector<double> v(h * w * c);
    for (double& x : v) x = static_cast<double>(gen() % 256);
    const Sample image = Values(DT_UINT8, {h, w, c}, v);
    const int64_t height = 3 + static_cast<int64_t>(gen() % h);
    const int64_t width = 3 + static_cast<int64_t>(gen() % (2 * w));
    Sample out;
    REQUIRE(Resize(image.ref(), height, width, &out, /*antialias=*/true).ok());
    for (int64_t y = 0; y < height; ++y) {
      for (int64_t x = 0; x < width; ++x) {
        for (int64_t k = 0; k < c; ++k) {
          const double want = reference(image, height, width, y, x, k);
          INFO(h << "x" << w << " -> " << height << "x" << width << " at (" << y
                 << ", " << x << ", " << k << "): " << want);
          // float sums against double: at most a rounding step apart.
          REQUIRE(std::abs(out.storage[(y * width + x) * c + k] -
                           std::floor(want + 0.5)) <= 1);
        }
      }
    }
  }
  // A flat image stays flat; growing, it is the bilinear resize exactly.
  Sample flat = Values(DT_UINT8, {9, 13, 1}, std::vector<double>(117, 201));
  Sample out, bilinear;
  REQUIRE(Resize(flat.ref(), 4, 5, &out, true).ok());
  for (uint8_t v : out.storage) CHECK(v == 201);
  Sample image = FashionImage(2);
  REQUIRE(Resize(image.ref(), 40, 50, &out, true).ok());
  REQUIRE(Resize(image.ref(), 40, 50, &bilinear).ok());
  CHECK(out.storage == bilinear.storage);
  // Shrinking, every source pixel counts: a one-pixel line survives a
  // 4x reduction antialiased and vanishes from the bilinear one's taps.
  std::vector<double> line(32 * 32, 0);
  for (int x = 0; x < 32; ++x) line[12 * 32 + x] = 255;  // row 12: no tap
  Sample lined = Values(DT_UINT8, {32, 32, 1}, line);
  REQUIRE(Resize(lined.ref(), 8, 8, &out, true).ok());
  REQUIRE(Resize(lined.ref(), 8, 8, &bilinear).ok());
  CHECK(out.storage[3 * 8] > 0);
  CHECK(bilinear.storage[3 * 8] == 0);
}

TEST_CASE("crop, flip and crop_mirror_normalize move the right pixels") {
  // 3x4 image, one channel, pixel (y, x) = 10y + x.
  std::vector<double> v;
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) v.push_back(10 * y + x);
  }
  Sample image = Values(DT_UINT8, {3, 4, 1}, v);
  Sample out;
  CropWindow window;
  SampleRng rng(1, 2, 3, 4);
  REQUIRE(PlaceCrop(3, 4, 2, 2, {}, &rng, &window).ok());
  CHECK((window.y == 0 && window.x == 1));
  REQUIRE(Crop(image.ref(), window, 2, 2, &out).ok());
  CHECK(out.storage == Bytes{1, 2, 11, 12});
  CHECK_FALSE(PlaceCrop(3, 4, 4, 2, {}, &rng, &window).ok());
  // DALI's anchors: roundf(pos * room), halves away from zero, so its
  // centre (0.5) of an odd room lies one pixel past ours (rounded down).
  REQUIRE(PlaceCrop(3, 6, 2, 3, {.anchored = true}, &rng, &window).ok());
  CHECK((window.y == 1 && window.x == 2));
  REQUIRE(PlaceCrop(3, 6, 2, 3, {}, &rng, &window).ok());
  CHECK((window.y == 0 && window.x == 1));
  REQUIRE(PlaceCrop(3, 6, 2, 3, {.anchored = true, .y = 0.0f, .x = 1.0f}, &rng,
                    &window)
              .ok());
  CHECK((window.y == 0 && window.x == 3));
  REQUIRE(PlaceCrop(40, 30, 13, 7, {.anchored = true, .y = 0.2f, .x = 0.7f},
                    &rng, &window)
              .ok());
  CHECK((window.y == 5 && window.x == 16));  // 5.4 and 16.1, rounded

  REQUIRE(Flip(image.ref(), /*horizontal=*/true, false, &out).ok());
  CHECK(std::vector<uint8_t>(out.storage.begin(), out.storage.begin() + 4) ==
        std::vector<uint8_t>{3, 2, 1, 0});
  REQUIRE(Flip(image.ref(), false, /*vertical=*/true, &out).ok());
  CHECK(out.storage[0] == 20);

  // Two channels: c0 = 10y + x, c1 = 100. Window 2x3 at (1, 1), mirrored.
  std::vector<double> two;
  for (int y = 0; y < 3; ++y) {
    for (int x = 0; x < 4; ++x) {
      two.push_back(10 * y + x);
      two.push_back(100);
    }
  }
  Sample rgb = Values(DT_UINT8, {3, 4, 2}, two);
  REQUIRE(CropMirrorNormalize(rgb.ref(), CropWindow{1, 1}, 2, 3, true,
                              {1.0f, 50.0f}, {2.0f, 10.0f}, &out)
              .ok());
  CHECK(out.type == DT_FLOAT32);
  CHECK(out.shape == SampleShape{2, 2, 3});
  const float* f = out.as<float>();
  // Channel 0, row 0 of the window is pixels 11, 12, 13, mirrored.
  CHECK(f[0] == Approx((13 - 1) / 2.0));
  CHECK(f[2] == Approx((11 - 1) / 2.0));
  CHECK(f[3] == Approx((23 - 1) / 2.0));
  CHECK(f[6] == Approx((100 - 50) / 10.0));
  // Padded channels (pad_output): planes of their values after the image's.
  REQUIRE(CropMirrorNormalize(rgb.ref(), CropWindow{1, 1}, 2, 3, true,
                              {1.0f, 50.0f}, {2.0f, 10.0f}, &out, {5, 6})
              .ok());
  CHECK(out.shape == SampleShape{4, 2, 3});
  CHECK(out.as<float>()[0] == Approx((13 - 1) / 2.0));
  for (int i = 0; i < 6; ++i) {
    CHECK(out.as<float>()[12 + i] == 5.0f);
    CHECK(out.as<float>()[18 + i] == 6.0f);
  }
  CHECK_FALSE(CropMirrorNormalize(rgb.ref(), CropWindow{2, 0}, 2, 3, false, {0},
                                  {1}, &out)
                  .ok());
  CHECK_FALSE(
      CropMirrorNormalize(rgb.ref(), {}, 2, 2, false, {0, 0, 0}, {1}, &out)
          .ok());

  REQUIRE(CastSample(image.ref(), DT_FLOAT32, &out).ok());
  CHECK(out.as<float>()[11] == 23.0f);
  // To integers: truncated, or rounded (halves away from zero) first;
  // saturated either way.
  Sample floats = Values(DT_FLOAT32, {1, 5, 1}, {2.5, -2.5, 2.49, 300.7, -0.6});
  REQUIRE(CastSample(floats.ref(), DT_INT8, &out).ok());
  CHECK(std::vector<int8_t>(out.as<int8_t>(), out.as<int8_t>() + 5) ==
        std::vector<int8_t>{2, -2, 2, 127, 0});
  REQUIRE(CastSample(floats.ref(), DT_INT8, &out, /*round=*/true).ok());
  CHECK(std::vector<int8_t>(out.as<int8_t>(), out.as<int8_t>() + 5) ==
        std::vector<int8_t>{3, -3, 2, 127, -1});
  REQUIRE(CastSample(floats.ref(), DT_UINT8, &out, /*round=*/true).ok());
  CHECK(out.storage == Bytes{3, 0, 2, 255, 0});
}

TEST_CASE("antialiased byte resize is its float definition exactly") {
  // The byte paths are vectorized (SSE2, or AVX2 where the CPU has it);
  // each must give every value as the two passes define it in float: along
  // the width sum_j w_j * v_j over the taps in order, then along the height
  // the same over those rows, rounded as StorePixel<uint8_t>.
  const uint64_t seed = testing::TestSeed("antialiased byte resize");
  std::mt19937_64 gen(seed);
  auto below = [&](int64_t n) {
    return static_cast<int64_t>(gen() % static_cast<uint64_t>(n));
  };
  for (int round = 0; round < 40; ++round) {
    const int64_t h = 4 + below(60), w = 4 + below(60);
    // Shrinking along the height, so the filter is widened there (an image
    // that shrinks nowhere takes the bilinear path); the width may grow.
    const int64_t height = 1 + below(h - 1), width = 1 + below(2 * w);
    const int64_t out_h = 1 + below(height), out_w = 1 + below(width);
    const CropWindow window{below(height - out_h + 1),
                            below(width - out_w + 1)};
    // Two images of one geometry, so the second reuses the taps the first
    // made (resample.cc keeps a thread's last); in odd rounds with the
    // other channel count, whose row pass reads other weights.
    const int64_t first_c = round % 4 < 2 ? 1 : 3;
    for (int64_t c : {first_c, round % 2 == 1 ? 4 - first_c : first_c}) {
      const Sample image = RandomBytes(gen, {h, w, c});
      Sample out;
      REQUIRE(ResizeWindow(image.ref(), ResizeArea{h, w, 0, 0}, height, width,
                           window, out_h, out_w, &out, /*antialias=*/true)
                  .ok());
      REQUIRE(out.shape == SampleShape{out_h, out_w, c});
      const FilterTaps ys = TriangleTaps(h, height, window.y, out_h, 0);
      const FilterTaps xs = TriangleTaps(w, width, window.x, out_w, 0);
      // Taps as wide as the widest output's, no wider (the row passes run
      // every output over `width` taps); the source range of the rows is
      // the taps' own.
      for (const FilterTaps* taps : {&ys, &xs}) {
        CHECK(taps->width ==
              std::max<int64_t>(
                  1, *std::max_element(taps->size.begin(), taps->size.end())));
      }
      int64_t begin = 0, end = 0, want_begin = h, want_end = 0;
      TriangleSourceRange(h, height, window.y, out_h, &begin, &end);
      for (int64_t y = 0; y < out_h; ++y) {
        want_begin = std::min(want_begin, ys.begin[y]);
        want_end = std::max(want_end, ys.begin[y] + ys.size[y]);
      }
      CHECK((begin == want_begin && end == want_end));
      auto filtered = [&](int64_t r, int64_t x, int64_t k) {
        float sum = 0;
        for (int64_t j = 0; j < xs.size[x]; ++j) {
          sum += xs.weights[x * xs.width + j] *
                 static_cast<float>(
                     image.storage[(r * w + xs.begin[x] + j) * c + k]);
        }
        return sum;
      };
      for (int64_t y = 0; y < out_h; ++y) {
        for (int64_t x = 0; x < out_w; ++x) {
          for (int64_t k = 0; k < c; ++k) {
            float sum = 0;
            for (int64_t j = 0; j < ys.size[y]; ++j) {
              sum += ys.weights[y * ys.width + j] *
                     filtered(ys.begin[y] + j, x, k);
            }
            const int want =
                static_cast<int>(std::min(255.0f, std::max(0.0f, sum)) + 0.5f);
            INFO("round " << round << " " << h << "x" << w << "x" << c << " -> "
                          << height << "x" << width << ", window " << out_h
                          << "x" << out_w << " at (" << window.y << ", "
                          << window.x << "), at (" << y << ", " << x << ", "
                          << k << ")");
            REQUIRE(out.storage[(y * out_w + x) * c + k] == want);
          }
        }
      }
    }
  }
}

TEST_CASE("crop_mirror_normalize is its per-value definition exactly") {
  // RGB rows take a vectorized path for whole blocks of 16 pixels and the
  // per-value loop for the rest: every value of both must be
  // (v - mean) * (1 / std) in float, bit for bit, mirrored or not.
  const uint64_t seed = testing::TestSeed("crop_mirror_normalize");
  std::mt19937_64 gen(seed);
  auto below = [&](int64_t n) {
    return static_cast<int64_t>(gen() % static_cast<uint64_t>(n));
  };
  for (int round = 0; round < 80; ++round) {
    const int64_t c = round % 4 == 0 ? 1 : 3;
    const std::vector<int64_t> shape{1 + below(6), 1 + below(70), c};
    const Sample image = RandomBytes(gen, shape);
    const int64_t height = 1 + below(shape[0]), width = 1 + below(shape[1]);
    const CropWindow window{below(shape[0] - height + 1),
                            below(shape[1] - width + 1)};
    const bool mirror = below(2) == 1;
    std::vector<float> mean, stddev;
    for (int64_t k = 0; k < c; ++k) {
      mean.push_back(static_cast<float>(below(25600)) / 100.0f);
      stddev.push_back(0.01f + static_cast<float>(below(10000)) / 100.0f);
    }
    Sample out;
    REQUIRE(CropMirrorNormalize(image.ref(), window, height, width, mirror,
                                mean, stddev, &out)
                .ok());
    REQUIRE(out.shape == SampleShape{c, height, width});
    const float* got = out.as<float>();
    for (int64_t k = 0; k < c; ++k) {
      for (int64_t y = 0; y < height; ++y) {
        for (int64_t x = 0; x < width; ++x) {
          const int64_t from_x = window.x + (mirror ? width - 1 - x : x);
          const uint8_t byte =
              image.storage[((window.y + y) * shape[1] + from_x) * c + k];
          const float want =
              (static_cast<float>(byte) - mean[k]) * (1.0f / stddev[k]);
          INFO("round " << round << " " << shape[0] << "x" << shape[1] << "x"
                        << c << ", window " << height << "x" << width << " at ("
                        << window.y << ", " << window.x << "), mirror "
                        << mirror << ", at (" << k << ", " << y << ", " << x
                        << ")");
          REQUIRE(std::memcmp(&got[(k * height + y) * width + x], &want,
                              sizeof(float)) == 0);
        }
      }
    }
    // Into a batch's row, streamed past the cache where it is aligned to the
    // vector (32 or 16 bytes) and stored where not: the same values.
    std::vector<float> row(c * height * width + 12);  // room to shift
    float* at = row.data();
    while (reinterpret_cast<uintptr_t>(at) % 32 != 0) ++at;
    const int64_t offset[] = {0, 4, 1};  // floats: 32, 16 and 4 bytes
    at += offset[round % 3];
    CropMirrorNormalizeInto(image.ref(), window, height, width, mirror, mean,
                            stddev, at, {}, /*stream=*/true);
    CHECK(std::memcmp(at, got, out.storage.size()) == 0);
  }
}

TEST_CASE("random crops stay inside, and depend only on the sample's seed") {
  const uint64_t seed = testing::TestSeed("random crops");
  for (int position = 0; position < 200; ++position) {
    SampleRng a(seed, 4, 0, position), b(seed, 4, 0, position);
    CropWindow wa, wb;
    REQUIRE(PlaceCrop(40, 30, 13, 7, {.random = true}, &a, &wa).ok());
    REQUIRE(PlaceCrop(40, 30, 13, 7, {.random = true}, &b, &wb).ok());
    CHECK((wa.y == wb.y && wa.x == wb.x));
    CHECK((wa.y >= 0 && wa.y <= 27 && wa.x >= 0 && wa.x <= 23));
  }
}

TEST_CASE("the ImageNet crop keeps its area and ratio ranges, or centres") {
  const uint64_t seed = testing::TestSeed("ImageNet crop");
  double area_sum = 0;
  int wide = 0, tall = 0;
  for (int position = 0; position < 2000; ++position) {
    SampleRng a(seed, 1, 0, position), b(seed, 1, 0, position);
    const CropBox box =
        PlaceRandomAreaCrop(375, 500, 0.1, 1.0, 0.8, 1.25, 100, &a);
    const CropBox again =
        PlaceRandomAreaCrop(375, 500, 0.1, 1.0, 0.8, 1.25, 100, &b);
    CHECK((box.y == again.y && box.x == again.x && box.height == again.height &&
           box.width == again.width));
    REQUIRE((box.y >= 0 && box.x >= 0 && box.height >= 1 && box.width >= 1));
    REQUIRE((box.y + box.height <= 375 && box.x + box.width <= 500));
    const double fraction = double(box.height) * box.width / (375.0 * 500.0);
    // Rounding each side to a pixel moves area and ratio by a little.
    CHECK(fraction >= 0.1 * 0.98);
    CHECK(fraction <= 1.0);
    const double ratio = double(box.width) / box.height;
    CHECK(ratio >= 0.8 * 0.98);
    CHECK(ratio <= 1.25 * 1.02);
    area_sum += fraction;
    wide += ratio > 1.05;
    tall += ratio < 0.95;
  }
  // Area uniform in [0.1, 1] (the draws that fit: a little below 0.55).
  CHECK(area_sum / 2000 > 0.4);
  CHECK(area_sum / 2000 < 0.6);
  CHECK(wide > 400);
  CHECK(tall > 400);

  // Nothing fits a 1 x 100 strip with ratio in [0.8, 1.25]: the centred
  // fallback cuts the width to the largest ratio.
  SampleRng rng(seed, 2, 0, 0);
  const CropBox strip =
      PlaceRandomAreaCrop(1, 100, 0.5, 1.0, 0.8, 1.25, 10, &rng);
  CHECK(
      (strip.height == 1 && strip.width == 1 && strip.y == 0 && strip.x == 49));
  const CropBox column =
      PlaceRandomAreaCrop(100, 2, 0.9, 1.0, 0.8, 1.25, 3, &rng);
  CHECK((column.width == 2 && column.height == 3 && column.x == 0 &&
         column.y == 48));
}

TEST_CASE("epoch orders are permutations, seeded, and differ per epoch") {
  const uint64_t seed = testing::TestSeed("epoch orders");
  for (int64_t window : {0, 1, 7, 1000}) {
    std::vector<int64_t> order = EpochOrder(100, window, seed, 0);
    std::vector<int64_t> sorted = order;
    std::sort(sorted.begin(), sorted.end());
    for (int64_t i = 0; i < 100; ++i) REQUIRE(sorted[i] == i);
    CHECK(order == EpochOrder(100, window, seed, 0));
    if (window <= 1) {
      CHECK(order == sorted);
    } else {
      CHECK(order != sorted);
      CHECK(order != EpochOrder(100, window, seed, 1));
    }
  }
  // A window of 7 moves no sample more than 6 places earlier.
  std::vector<int64_t> order = EpochOrder(100, 7, seed, 3);
  for (int64_t i = 0; i < 100; ++i) CHECK(order[i] <= i + 6);
  // Shards cover every sample once.
  int64_t covered = 0, last_end = 0;
  for (int64_t shard = 0; shard < 3; ++shard) {
    int64_t begin = 0, end = 0;
    ShardRange(10, shard, 3, &begin, &end);
    CHECK(begin == last_end);
    covered += end - begin;
    last_end = end;
  }
  CHECK((covered == 10 && last_end == 10));
}

TEST_CASE("ShardPlan: equal shards covering every sample, fewer too") {
  for (int64_t count : {1, 2, 7, 40}) {
    for (int64_t shards : {1, 2, 3, 5}) {
      for (bool shuffle : {false, true}) {
        INFO(count << " samples, " << shards << " shards, shuffle " << shuffle);
        std::set<int64_t> covered;
        for (int64_t shard = 0; shard < shards; ++shard) {
          ShardPlan plan(count, shard, shards, shuffle,
                         /*stick_to_shard=*/false);
          CHECK(plan.per_shard() == (count + shards - 1) / shards);
          for (int64_t p = 0; p < plan.per_shard(); ++p) {
            const int64_t index = plan.Index(/*epoch=*/0, p);
            REQUIRE(index >= 0);
            REQUIRE(index < count);
            covered.insert(index);
          }
        }
        CHECK(static_cast<int64_t>(covered.size()) == count);
      }
    }
  }
}

TEST_CASE("ShardPlan: groups shuffle as units, each kept in order") {
  // Five tar files of 4, 7, 1, 6 and 6 samples over 3 ranks.
  const std::vector<int64_t> groups = {4, 7, 1, 6, 6};
  std::vector<int64_t> group_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    group_of.insert(group_of.end(), groups[g], static_cast<int64_t>(g));
  }
  std::set<int64_t> covered;
  std::vector<int64_t> all;
  for (int64_t shard = 0; shard < 3; ++shard) {
    ShardPlan plan(24, shard, 3, /*shuffle=*/true, /*stick_to_shard=*/true,
                   groups);
    REQUIRE(plan.per_shard() == 8);
    for (int64_t p = 0; p < 8; ++p) all.push_back(plan.Index(0, p));
  }
  // Read in order: each group's samples are consecutive and ascending,
  // so a rank's run crosses each group at most once.
  for (size_t i = 1; i < all.size(); ++i) {
    if (group_of[all[i]] == group_of[all[i - 1]]) {
      CHECK(all[i] == all[i - 1] + 1);
    }
  }
  std::set<int64_t> groups_seen;
  int64_t changes = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (i == 0 || group_of[all[i]] != group_of[all[i - 1]]) {
      CHECK(groups_seen.insert(group_of[all[i]]).second);
      ++changes;
    }
  }
  CHECK(changes == 5);
  covered.insert(all.begin(), all.end());
  CHECK(covered.size() == 24);
  // Shuffled: not the files' order.
  std::vector<int64_t> sorted = all;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted != all);
  // Groups that do not add up to the count are ignored (each sample a
  // unit), as when none are given.
  ShardPlan plain(24, 0, 3, true, true);
  ShardPlan wrong(24, 0, 3, true, true, {4, 4});
  for (int64_t p = 0; p < 8; ++p) CHECK(plain.Index(0, p) == wrong.Index(0, p));
}

TEST_CASE("directories list images by path, labelled by subdirectory") {
  const std::string dir = testing::TestTempDir("listing");
  REQUIRE(WriteFashionImages(dir, 6, 32, 2).ok());
  std::ofstream(dir + "/README.txt") << "not an image";
  auto files = ListImageDirectory(dir);
  REQUIRE(files.ok());
  CHECK(files->size() == 8);  // 6 images and 2 broken ones, no README
  for (size_t i = 1; i < files->size(); ++i) {
    CHECK((*files)[i - 1].path < (*files)[i].path);
  }
  // Subdirectories (labels of Fashion-MNIST images 0..5, then "broken")
  // numbered in sorted order.
  CHECK(files->back().path.find("/broken/") != std::string::npos);
  CHECK(files->front().label == 0);
  CHECK(absl::IsNotFound(ListImageDirectory(dir + "/nope").status()));

  const std::string list = dir + "/list.txt";
  std::ofstream(list) << "# files\n0/img1.png 4\n\n" << dir << "/x.jpg\n";
  auto listed = ReadFileList(list);
  REQUIRE(listed.ok());
  REQUIRE(listed->size() == 2);
  CHECK((*listed)[0].path == dir + "/0/img1.png");
  CHECK((*listed)[0].label == 4);
  std::ofstream(list) << "a.jpg seven\n";
  CHECK_THAT(std::string(ReadFileList(list).status().message()),
             Catch::Contains("list.txt:1"));
}

}  // namespace
}  // namespace actorflow::internal::pipeline
