#include "pipeline/coord_transform.h"

#include "absl/strings/str_cat.h"
#include "kernels/convert.h"

namespace actorflow::internal::pipeline {

namespace {

class CoordTransformOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto m = ctx.FloatListAttr("m");
    auto t = ctx.FloatListAttr("t");
    if (!m.ok()) return m.status();
    if (!t.ok()) return t.status();
    m_.assign(m->begin(), m->end());
    t_.assign(t->begin(), t->end());
    if (m_.size() > 1 && t_.size() > 1 && m_.size() % t_.size() != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attrs 'm' and 't': 't' has ", t_.size(),
                       " values, one per row of "
                       "'m', whose ",
                       m_.size(), " values make no such rows"));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (in.max_shape.empty()) {
      return absl::InvalidArgumentError(
          "coord_transform: takes points ([..., D]), got a scalar");
    }
    const int64_t dims = in.max_shape.back();
    auto rows = Rows(dims);
    if (!rows.ok()) return rows.status();
    SampleSpec out{DT_FLOAT32, in.max_shape};
    out.max_shape.back() = *rows;
    return out;
  }

  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    if (in.shape.empty()) {
      return absl::InvalidArgumentError(
          "coord_transform: takes points ([..., D]), got a scalar");
    }
    const int64_t dims = in.shape.back();
    auto rows = Rows(dims);
    if (!rows.ok()) return rows.status();
    SampleShape shape(in.shape.begin(), in.shape.end());
    shape.back() = *rows;
    out->Reshape(DT_FLOAT32, shape);
    const int64_t points = dims == 0 ? 0 : ShapeElemCnt(in.shape) / dims;
    float* dst = out->as<float>();
    return VisitDataType(in.type, [&](auto tag) {
      using T = typename decltype(tag)::type;
      const T* src = in.as<T>();
      for (int64_t p = 0; p < points; ++p) {
        const T* point = src + p * dims;
        for (int64_t r = 0; r < *rows; ++r) {
          double sum = t_.empty() ? 0.0 : t_[t_.size() == 1 ? 0 : r];
          for (int64_t d = 0; d < dims; ++d) {
            const double weight = m_.size() > 1 ? m_[r * dims + d]
                                  : r != d      ? 0.0
                                  : m_.empty()  ? 1.0
                                                : m_[0];
            sum += weight * ConvertElement<double>(point[d]);
          }
          dst[p * *rows + r] = static_cast<float>(sum);
        }
      }
      return absl::OkStatus();
    });
  }

 private:
  // The output's coordinates for points of `dims`: m's rows.
  absl::StatusOr<int64_t> Rows(int64_t dims) const {
    if (dims < 0) return m_.size() <= 1 ? dims : -1;  // not known yet
    if (m_.size() <= 1) {  // the identity, or one value times it
      if (t_.size() > 1 && static_cast<int64_t>(t_.size()) != dims) {
        return absl::InvalidArgumentError(
            absl::StrCat("coord_transform: 't' has ", t_.size(),
                         " values for points of ", dims, " coordinates"));
      }
      return dims;
    }
    if (dims == 0 || m_.size() % dims != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "coord_transform: 'm' has ", m_.size(),
          " values, not rows of the points' ", dims, " coordinates"));
    }
    const int64_t rows = static_cast<int64_t>(m_.size()) / dims;
    if (t_.size() > 1 && static_cast<int64_t>(t_.size()) != rows) {
      return absl::InvalidArgumentError(
          absl::StrCat("coord_transform: 't' has ", t_.size(), " values for ",
                       rows, " rows of 'm'"));
    }
    return rows;
  }

  std::vector<double> m_, t_;
};

}  // namespace

std::unique_ptr<SampleOp> MakeCoordTransformOp() {
  return std::make_unique<CoordTransformOp>();
}

std::vector<std::string> CoordTransformAttrs() { return {"m", "t"}; }

}  // namespace actorflow::internal::pipeline
