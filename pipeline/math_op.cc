#include "pipeline/math_op.h"

#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kernels/convert.h"

namespace actorflow::internal::pipeline {

namespace {

// f(x, value) per element, in double.
using ElementFn = double (*)(double x, double value);

struct MathFn {
  ElementFn apply;
  bool keeps_type;  // else float32 out
};

const std::map<std::string, MathFn>& MathFns() {
  static const auto* fns = new std::map<std::string, MathFn>{
      {"abs", {[](double x, double) { return std::fabs(x); }, true}},
      {"fabs", {[](double x, double) { return std::fabs(x); }, false}},
      {"floor", {[](double x, double) { return std::floor(x); }, true}},
      {"ceil", {[](double x, double) { return std::ceil(x); }, true}},
      {"min", {[](double x, double v) { return std::fmin(x, v); }, true}},
      {"max", {[](double x, double v) { return std::fmax(x, v); }, true}},
      {"sqrt", {[](double x, double) { return std::sqrt(x); }, false}},
      {"rsqrt", {[](double x, double) { return 1 / std::sqrt(x); }, false}},
      {"cbrt", {[](double x, double) { return std::cbrt(x); }, false}},
      {"exp", {[](double x, double) { return std::exp(x); }, false}},
      {"log", {[](double x, double) { return std::log(x); }, false}},
      {"log2", {[](double x, double) { return std::log2(x); }, false}},
      {"log10", {[](double x, double) { return std::log10(x); }, false}},
      {"sin", {[](double x, double) { return std::sin(x); }, false}},
      {"cos", {[](double x, double) { return std::cos(x); }, false}},
      {"tan", {[](double x, double) { return std::tan(x); }, false}},
      {"asin", {[](double x, double) { return std::asin(x); }, false}},
      {"acos", {[](double x, double) { return std::acos(x); }, false}},
      {"atan", {[](double x, double) { return std::atan(x); }, false}},
      {"sinh", {[](double x, double) { return std::sinh(x); }, false}},
      {"cosh", {[](double x, double) { return std::cosh(x); }, false}},
      {"tanh", {[](double x, double) { return std::tanh(x); }, false}},
      {"asinh", {[](double x, double) { return std::asinh(x); }, false}},
      {"acosh", {[](double x, double) { return std::acosh(x); }, false}},
      {"atanh", {[](double x, double) { return std::atanh(x); }, false}},
      {"pow", {[](double x, double v) { return std::pow(x, v); }, false}},
      {"rpow", {[](double x, double v) { return std::pow(v, x); }, false}},
  };
  return *fns;
}

class MathOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto name = ctx.StringAttr("fn");
    if (!name.ok()) return name.status();
    if (*name == "clamp") {
      auto lo = ctx.FloatAttr("lo");
      auto hi = ctx.FloatAttr("hi");
      if (!lo.ok()) return lo.status();
      if (!hi.ok()) return hi.status();
      if (*lo > *hi) {
        return absl::InvalidArgumentError(
            absl::StrCat("attrs 'lo' ", *lo, " > 'hi' ", *hi));
      }
      lo_ = *lo;
      hi_ = *hi;
      clamp_ = true;
      keeps_type_ = true;
      return absl::OkStatus();
    }
    auto it = MathFns().find(*name);
    if (it == MathFns().end()) {
      std::vector<std::string> names{"clamp"};
      for (const auto& [known, fn] : MathFns()) names.push_back(known);
      return absl::InvalidArgumentError(absl::StrCat("attr 'fn': one of ",
                                                     absl::StrJoin(names, ", "),
                                                     "; got \"", *name, "\""));
    }
    fn_ = it->second.apply;
    keeps_type_ = it->second.keeps_type;
    const bool takes_value =
        *name == "min" || *name == "max" || *name == "pow" || *name == "rpow";
    auto value =
        takes_value ? ctx.FloatAttr("value") : ctx.FloatAttrOr("value", 0);
    if (!value.ok()) return value.status();
    value_ = *value;
    return absl::OkStatus();
  }

  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    return SampleSpec{keeps_type_ ? in.type : DT_FLOAT32, in.max_shape};
  }

  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    const DataType type = keeps_type_ ? in.type : DT_FLOAT32;
    out->Reshape(type, in.shape);
    const int64_t n = ShapeElemCnt(in.shape);
    return VisitDataType(in.type, [&](auto from_tag) {
      using From = typename decltype(from_tag)::type;
      return VisitDataType(type, [&](auto to_tag) {
        using To = typename decltype(to_tag)::type;
        const From* src = in.as<From>();
        To* dst = out->as<To>();
        for (int64_t i = 0; i < n; ++i) {
          const double x = ConvertElement<double>(src[i]);
          const double y =
              clamp_ ? std::fmin(std::fmax(x, lo_), hi_) : fn_(x, value_);
          dst[i] = ConvertElement<To>(y);
        }
        return absl::OkStatus();
      });
    });
  }

 private:
  ElementFn fn_ = nullptr;
  bool clamp_ = false;
  bool keeps_type_ = false;
  double value_ = 0, lo_ = 0, hi_ = 0;
};

}  // namespace

std::unique_ptr<SampleOp> MakeMathOp() { return std::make_unique<MathOp>(); }

std::vector<std::string> MathAttrs() { return {"fn", "value", "lo", "hi"}; }

}  // namespace actorflow::internal::pipeline
