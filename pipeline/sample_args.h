#ifndef ACTORFLOW_PIPELINE_SAMPLE_ARGS_H_
#define ACTORFLOW_PIPELINE_SAMPLE_ARGS_H_

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "actorflow/kernel.h"
#include "pipeline/sample.h"

// A scalar argument of a per-sample operator that may differ per sample:
// attr `name` (one value for every sample, a float or an int), or drawn for
// each sample from the operator's generator: `name_uniform` [lo, hi],
// `name_normal` [mean, stddev] or `name_coin_flip` p (1 with probability p,
// else 0). At most one of the four. The draws come from the sample's own
// generator, so they are the same whatever thread runs the sample; with
// `name_stream` s (a random value given to several operators) from that value's
// generator (SampleRng::ForStream), so every operator given it draws the same.
namespace actorflow::internal::pipeline {

// A uniform draw in [0, 1) for a probability: from the sample's own
// generator, or with a stream (>= 0) from that value's, so that operators
// sharing a coin flip agree. The sample's generator advances either way,
// so the operator's other draws do not depend on the stream.
// A stream with this bit set is the same value negated (or, for a coin
// flip, its complement): its draws use 1 - u where the stream's use u.
constexpr int64_t kInvertedStream = int64_t{1} << 40;

inline double UniformFor(SampleRng* rng, int64_t stream) {
  const double own = rng->Uniform();
  if (stream < 0) return own;
  const double u =
      rng->ForStream(static_cast<uint64_t>(stream & ~kInvertedStream))
          .Uniform();
  return (stream & kInvertedStream) ? 1.0 - u : u;
}

// A probability attr (a 0/1 argument such as mirror=: the chance of 1),
// `fallback` when absent.
inline absl::StatusOr<double> Probability(const KernelInitContext& ctx,
                                          const char* name, double fallback) {
  auto p = ctx.FloatAttrOr(name, fallback);
  if (p.ok() && (*p < 0 || *p > 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr '", name, "': a probability in [0, 1], got ", *p));
  }
  return p;
}

// The two sides of a flip (`flip`, `bb_flip`): attrs `horizontal` and
// `vertical`, each the probability of flipping that way, with
// `horizontal_stream` / `vertical_stream` for a coin flip shared between
// operators. Both are drawn for every sample, so that one probability does
// not shift the other's draws, and every operator given the same streams
// flips the same samples the same ways.
struct FlipSides {
  double horizontal = 0, vertical = 0;
  int64_t h_stream = -1, v_stream = -1;

  absl::Status Init(const KernelInitContext& ctx, double horizontal_default,
                    double vertical_default) {
    auto h = Probability(ctx, "horizontal", horizontal_default);
    auto v = Probability(ctx, "vertical", vertical_default);
    auto hs = ctx.IntAttrOr("horizontal_stream", -1);
    auto vs = ctx.IntAttrOr("vertical_stream", -1);
    for (const absl::Status& s :
         {h.status(), v.status(), hs.status(), vs.status()}) {
      if (!s.ok()) return s;
    }
    horizontal = *h;
    vertical = *v;
    h_stream = *hs;
    v_stream = *vs;
    return absl::OkStatus();
  }

  // This sample's sides: {horizontally, vertically}.
  std::pair<bool, bool> Draw(SampleRng* rng) const {
    const bool h = UniformFor(rng, h_stream) < horizontal;
    const bool v = UniformFor(rng, v_stream) < vertical;
    return {h, v};
  }
};

// A float attr, where a whole number given as an int attr is the same
// value; `fallback` when absent.
inline absl::StatusOr<double> NumberAttrOr(const KernelInitContext& ctx,
                                           const std::string& name,
                                           double fallback) {
  auto number = ctx.FloatAttrOr(name, fallback);
  if (number.ok()) return number;
  auto whole = ctx.IntAttrOr(name, 0);
  if (!whole.ok()) return number.status();
  return static_cast<double>(*whole);
}

class ScalarArg {
 public:
  // The attrs a per-sample argument `name` may be given as.
  static std::vector<std::string> AttrNames(const std::string& name) {
    return {name, name + "_uniform", name + "_normal", name + "_coin_flip",
            name + "_stream"};
  }

  absl::Status Init(const KernelInitContext& ctx, const std::string& name,
                    double fallback) {
    name_ = name;
    value_ = fallback;
    int given = 0;
    auto fixed = NumberAttrOr(ctx, name, fallback);
    auto uniform = ctx.FloatListAttr(name + "_uniform");
    auto normal = ctx.FloatListAttr(name + "_normal");
    auto coin = ctx.FloatAttrOr(name + "_coin_flip", -1);
    auto stream = ctx.IntAttrOr(name + "_stream", -1);
    for (const absl::Status& s :
         {fixed.status(), uniform.status(), normal.status(), coin.status(),
          stream.status()}) {
      if (!s.ok()) return s;
    }
    stream_ = *stream;
    if (*fixed != fallback) ++given;
    value_ = *fixed;
    if (!uniform->empty()) {
      ++given;
      if (uniform->size() != 2 || (*uniform)[0] > (*uniform)[1]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "attr '", name, "_uniform': wants [low, high], low <= high"));
      }
      kind_ = Kind::kUniform;
      a_ = (*uniform)[0];
      b_ = (*uniform)[1];
    }
    if (!normal->empty()) {
      ++given;
      if (normal->size() != 2 || (*normal)[1] < 0) {
        return absl::InvalidArgumentError(absl::StrCat(
            "attr '", name, "_normal': wants [mean, stddev], stddev >= 0"));
      }
      kind_ = Kind::kNormal;
      a_ = (*normal)[0];
      b_ = (*normal)[1];
    }
    if (*coin != -1) {
      ++given;
      if (*coin < 0 || *coin > 1) {
        return absl::InvalidArgumentError(
            absl::StrCat("attr '", name,
                         "_coin_flip': a probability in [0, 1], got ", *coin));
      }
      kind_ = Kind::kCoinFlip;
      a_ = *coin;
    }
    if (given > 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("attrs '", name, "', '", name, "_uniform', '", name,
                       "_normal', '", name, "_coin_flip': give at most one"));
    }
    return absl::OkStatus();
  }

  bool varies() const { return kind_ != Kind::kFixed; }
  // The value's range, for shape inference: [lo, hi] (normal: +-6 sigma).
  double low() const {
    return kind_ == Kind::kUniform    ? a_
           : kind_ == Kind::kNormal   ? a_ - 6 * b_
           : kind_ == Kind::kCoinFlip ? 0
                                      : value_;
  }
  double high() const {
    return kind_ == Kind::kUniform    ? b_
           : kind_ == Kind::kNormal   ? a_ + 6 * b_
           : kind_ == Kind::kCoinFlip ? 1
                                      : value_;
  }

  // This sample's value. Fixed values draw nothing.
  double Draw(SampleRng* rng) const {
    if (kind_ == Kind::kFixed) return value_;
    if (stream_ < 0) return DrawFrom(rng, false);
    SampleRng shared =
        rng->ForStream(static_cast<uint64_t>(stream_ & ~kInvertedStream));
    return DrawFrom(&shared, (stream_ & kInvertedStream) != 0);
  }

 private:
  double DrawFrom(SampleRng* rng, bool inverted) const {
    switch (kind_) {
      case Kind::kFixed:
        return value_;
      case Kind::kUniform: {
        const double u = rng->Uniform();
        return a_ + (b_ - a_) * (inverted ? 1.0 - u : u);
      }
      case Kind::kCoinFlip: {
        const double u = rng->Uniform();
        return (inverted ? 1.0 - u : u) < a_ ? 1.0 : 0.0;
      }
      case Kind::kNormal: {
        // Box-Muller; 1 - u keeps the logarithm's argument above 0.
        const double u = 1.0 - rng->Uniform(), v = rng->Uniform();
        const double z =
            std::sqrt(-2.0 * std::log(u)) * std::cos(6.283185307179586 * v);
        return a_ + b_ * (inverted ? -z : z);
      }
    }
    return value_;
  }

  enum class Kind { kFixed, kUniform, kNormal, kCoinFlip };
  std::string name_;
  int64_t stream_ = -1;
  Kind kind_ = Kind::kFixed;
  double value_ = 0, a_ = 0, b_ = 0;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SAMPLE_ARGS_H_
