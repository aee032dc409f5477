#include "pipeline/noise.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/pixel_store.h"

namespace actorflow::internal::pipeline {
namespace {

// SampleRng as a standard uniform random bit generator, for the standard
// library's normal and Poisson distributions.
class RngBits {
 public:
  using result_type = uint64_t;
  explicit RngBits(SampleRng* rng) : rng_(rng) {}
  static constexpr result_type min() { return 0; }
  static constexpr result_type max() {
    return std::numeric_limits<uint64_t>::max();
  }
  result_type operator()() { return rng_->Next(); }

 private:
  SampleRng* rng_;
};

absl::Status ExpectValues(const char* op, const SampleRef& in) {
  if (in.type == DT_UINT8 || in.type == DT_FLOAT32) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": takes uint8 or float32 samples, got ",
                   DataTypeName(in.type), " ", ShapeString(in.shape)));
}

// out[i] = f(in[i]) stored as the sample's type, for i in element order.
template <typename F>
void MapValues(const SampleRef& in, Sample* out, F&& f) {
  out->Reshape(in.type, in.shape);
  const int64_t n = ShapeElemCnt(in.shape);
  if (in.type == DT_UINT8) {
    const uint8_t* src = in.as<uint8_t>();
    uint8_t* dst = out->as<uint8_t>();
    for (int64_t i = 0; i < n; ++i) {
      dst[i] = StorePixel<uint8_t>(f(static_cast<float>(src[i])));
    }
  } else {
    const float* src = in.as<float>();
    float* dst = out->as<float>();
    for (int64_t i = 0; i < n; ++i) dst[i] = f(src[i]);
  }
}

}  // namespace

absl::Status GaussianNoise(const SampleRef& in, double mean, double stddev,
                           SampleRng* rng, Sample* out) {
  absl::Status ok = ExpectValues("noise.gaussian", in);
  if (!ok.ok()) return ok;
  if (!(stddev >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("noise.gaussian: stddev ", stddev, " is negative"));
  }
  RngBits bits(rng);
  std::normal_distribution<float> noise(static_cast<float>(mean),
                                        static_cast<float>(stddev));
  MapValues(in, out, [&](float v) { return v + noise(bits); });
  return absl::OkStatus();
}

float DefaultSalt(DataType type) { return type == DT_UINT8 ? 255.0f : 1.0f; }
float DefaultPepper(DataType type) { return type == DT_UINT8 ? 0.0f : -1.0f; }

absl::Status SaltAndPepperNoise(const SampleRef& in, double prob,
                                double salt_vs_pepper, float salt, float pepper,
                                bool per_channel, SampleRng* rng, Sample* out) {
  absl::Status ok = ExpectValues("noise.salt_and_pepper", in);
  if (!ok.ok()) return ok;
  if (!(prob >= 0 && prob <= 1) ||
      !(salt_vs_pepper >= 0 && salt_vs_pepper <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "noise.salt_and_pepper: prob ", prob, " and salt_vs_pepper ",
        salt_vs_pepper, " must each be in [0, 1]"));
  }
  // A pixel's values share one draw unless per channel.
  const int64_t group = per_channel || in.shape.size() != 3
                            ? 1
                            : std::max<int64_t>(in.shape[2], 1);
  int64_t left = 0;  // values left in the current pixel
  float replace = 0;
  bool noisy = false;
  MapValues(in, out, [&](float v) {
    if (left == 0) {
      noisy = rng->Uniform() < prob;
      if (noisy) replace = rng->Uniform() < salt_vs_pepper ? salt : pepper;
      left = group;
    }
    --left;
    return noisy ? replace : v;
  });
  return absl::OkStatus();
}

absl::Status ShotNoise(const SampleRef& in, double factor, SampleRng* rng,
                       Sample* out) {
  absl::Status ok = ExpectValues("noise.shot", in);
  if (!ok.ok()) return ok;
  if (!(factor >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("noise.shot: factor ", factor, " is negative"));
  }
  if (factor == 0) {
    MapValues(in, out, [](float v) { return v; });
    return absl::OkStatus();
  }
  RngBits bits(rng);
  // Built once per byte value: a Poisson distribution's set-up is several
  // times its draw.
  std::vector<std::poisson_distribution<int64_t>> by_byte;
  if (in.type == DT_UINT8) {
    by_byte.emplace_back();  // 0 stays 0; never drawn
    for (int v = 1; v < 256; ++v) by_byte.emplace_back(v / factor);
  }
  MapValues(in, out, [&](float v) {
    if (!(v > 0)) return 0.0f;
    int64_t count = 0;
    if (in.type == DT_UINT8) {
      count = by_byte[static_cast<int>(v)](bits);
    } else {
      count = std::poisson_distribution<int64_t>(v / factor)(bits);
    }
    return static_cast<float>(static_cast<double>(count) * factor);
  });
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
