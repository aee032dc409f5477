#include "pipeline/table_rows.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/convert.h"

namespace actorflow::internal::pipeline {

namespace {

class TableRowsOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto values = ctx.FloatListAttr("values");
    auto ints = ctx.IntListAttr("int_values");
    auto offsets = ctx.IntListAttr("offsets");
    auto width = ctx.IntAttrOr("row_width", 0);
    for (const absl::Status& s :
         {values.status(), ints.status(), offsets.status(), width.status()}) {
      if (!s.ok()) return s;
    }
    if (!values->empty() && !ints->empty()) {
      return absl::InvalidArgumentError(
          "attrs 'values' and 'int_values': give one of them");
    }
    type_ = ints->empty() ? DT_FLOAT32 : DT_INT32;
    const int64_t count = static_cast<int64_t>(
        type_ == DT_FLOAT32 ? values->size() : ints->size());
    if (type_ == DT_FLOAT32) {
      floats_.assign(values->begin(), values->end());
    } else {
      ints_.clear();
      for (int64_t v : *ints) {
        if (v != static_cast<int32_t>(v)) {
          return absl::InvalidArgumentError(
              absl::StrCat("attr 'int_values': ", v, " does not fit an int32"));
        }
        ints_.push_back(static_cast<int32_t>(v));
      }
    }
    if (offsets->size() < 2 || offsets->front() != 0 ||
        offsets->back() != count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "attr 'offsets': one more than the rows, from 0 to the values' "
          "count (",
          count, "), got ", offsets->size(), " offsets"));
    }
    if (*width < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'row_width': 0 or more, got ", *width));
    }
    width_ = *width;
    longest_ = 0;
    for (size_t i = 1; i < offsets->size(); ++i) {
      const int64_t n = (*offsets)[i] - (*offsets)[i - 1];
      if (n < 0 || (width_ > 0 && n % width_ != 0)) {
        return absl::InvalidArgumentError(
            absl::StrCat("attr 'offsets': row ", i - 1, " has ", n, " values",
                         n < 0 ? "" : absl::StrCat(", not rows of ", width_)));
      }
      longest_ = std::max(longest_, n);
    }
    offsets_ = *std::move(offsets);
    return absl::OkStatus();
  }

  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (!IsIntegral(in.type)) {
      return absl::InvalidArgumentError(
          absl::StrCat("table_rows: takes a row index (an integer), got ",
                       DataTypeName(in.type)));
    }
    return SampleSpec{type_, Shape(longest_)};
  }

  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    if (!IsIntegral(in.type) || ShapeElemCnt(in.shape) != 1) {
      return absl::InvalidArgumentError(
          "table_rows: takes one row index (an integer) per sample");
    }
    const int64_t row = VisitDataType(in.type, [&](auto tag) -> int64_t {
      using T = typename decltype(tag)::type;
      return ConvertElement<int64_t>(in.as<T>()[0]);
    });
    const int64_t rows = static_cast<int64_t>(offsets_.size()) - 1;
    if (row < 0 || row >= rows) {
      return absl::InvalidArgumentError(absl::StrCat(
          "table_rows: row ", row, " is not in the table's ", rows));
    }
    const int64_t begin = offsets_[row];
    const int64_t n = offsets_[row + 1] - begin;
    out->Reshape(type_, Shape(n));
    if (type_ == DT_INT32) {
      std::memcpy(out->storage.data(), ints_.data() + begin, n * 4);
    } else {
      float* dst = out->as<float>();
      for (int64_t k = 0; k < n; ++k) {
        dst[k] = static_cast<float>(floats_[begin + k]);
      }
    }
    return absl::OkStatus();
  }

 private:
  static bool IsIntegral(DataType type) {
    return type == DT_INT32 || type == DT_INT64 || type == DT_UINT8 ||
           type == DT_INT8;
  }
  std::vector<int64_t> Shape(int64_t n) const {
    if (width_ == 0) return {n};
    return {n / width_, width_};
  }

  DataType type_ = DT_FLOAT32;
  std::vector<double> floats_;
  std::vector<int32_t> ints_;
  std::vector<int64_t> offsets_;
  int64_t width_ = 0;
  int64_t longest_ = 0;
};

}  // namespace

std::unique_ptr<SampleOp> MakeTableRowsOp() {
  return std::make_unique<TableRowsOp>();
}

std::vector<std::string> TableRowsAttrs() {
  return {"values", "int_values", "offsets", "row_width"};
}

}  // namespace actorflow::internal::pipeline
