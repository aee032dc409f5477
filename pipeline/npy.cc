#include "pipeline/npy.h"

#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace actorflow::internal::pipeline {
namespace {

constexpr char kMagic[] = "\x93NUMPY";

absl::Status Bad(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("npy: ", what));
}

// The text after `'key':` in the header's dict, up to the end.
absl::StatusOr<absl::string_view> ValueOf(absl::string_view dict,
                                          absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  size_t at = dict.find(quoted);
  if (at == absl::string_view::npos) {
    return Bad(absl::StrCat("the header has no '", key, "': ", dict));
  }
  at = dict.find(':', at + quoted.size());
  if (at == absl::string_view::npos) {
    return Bad(absl::StrCat("the header's '", key, "' has no value"));
  }
  return absl::StripLeadingAsciiWhitespace(dict.substr(at + 1));
}

absl::StatusOr<DataType> TypeOf(absl::string_view descr) {
  // '|' (no byte order) or '<' (little-endian, this machine's order).
  if (descr == "|u1" || descr == "<u1") return DT_UINT8;
  if (descr == "|i1" || descr == "<i1") return DT_INT8;
  if (descr == "|b1") return DT_BOOL;
  if (descr == "<i4") return DT_INT32;
  if (descr == "<i8") return DT_INT64;
  if (descr == "<f4") return DT_FLOAT32;
  if (descr == "<f8") return DT_FLOAT64;
  return Bad(absl::StrCat(
      "dtype '", descr,
      "' (takes bool, uint8, int8, int32, int64, float32 and float64, "
      "little-endian)"));
}

}  // namespace

absl::StatusOr<NpyHeader> ReadNpyHeader(absl::Span<const uint8_t> file) {
  const size_t magic = sizeof(kMagic) - 1;
  if (file.size() < magic + 4 || std::memcmp(file.data(), kMagic, magic) != 0) {
    return Bad("not a .npy file (no \\x93NUMPY magic)");
  }
  const int major = file[magic];
  size_t length = 0, begin = 0;
  if (major == 1) {
    length = file[magic + 2] | (size_t{file[magic + 3]} << 8);
    begin = magic + 4;
  } else if (major == 2 || major == 3) {
    if (file.size() < magic + 6) return Bad("the header is cut short");
    for (int i = 3; i >= 0; --i) length = (length << 8) | file[magic + 2 + i];
    begin = magic + 6;
  } else {
    return Bad(absl::StrCat("format version ", major, " (takes 1 to 3)"));
  }
  if (begin + length > file.size()) return Bad("the header is cut short");
  const absl::string_view dict(reinterpret_cast<const char*>(&file[begin]),
                               length);
  NpyHeader header;
  header.data_offset = static_cast<int64_t>(begin + length);
  auto descr = ValueOf(dict, "descr");
  if (!descr.ok()) return descr.status();
  if (descr->empty() || (*descr)[0] != '\'') {
    return Bad(absl::StrCat("'descr' is not a simple dtype: ", *descr));
  }
  auto type = TypeOf(descr->substr(1, descr->find('\'', 1) - 1));
  if (!type.ok()) return type.status();
  header.type = *type;
  auto order = ValueOf(dict, "fortran_order");
  if (!order.ok()) return order.status();
  header.fortran_order = absl::StartsWith(*order, "True");
  auto shape = ValueOf(dict, "shape");
  if (!shape.ok()) return shape.status();
  const size_t close = shape->find(')');
  if (shape->empty() || (*shape)[0] != '(' ||
      close == absl::string_view::npos) {
    return Bad(absl::StrCat("'shape' is not a tuple: ", *shape));
  }
  for (absl::string_view part : absl::StrSplit(shape->substr(1, close - 1), ',',
                                               absl::SkipWhitespace())) {
    part = absl::StripAsciiWhitespace(part);
    int64_t extent = 0;
    if (!absl::SimpleAtoi(part, &extent) || extent < 0) {
      return Bad(absl::StrCat("'shape' has '", part, "'"));
    }
    header.shape.push_back(extent);
  }
  return header;
}

absl::Status DecodeNpy(absl::Span<const uint8_t> file, Sample* out) {
  auto header = ReadNpyHeader(file);
  if (!header.ok()) return header.status();
  out->Reshape(header->type, header->shape);
  const size_t bytes = out->storage.size();
  if (file.size() - header->data_offset < bytes) {
    return Bad(absl::StrCat("the file holds ",
                            file.size() - header->data_offset,
                            " bytes of values where its header says ", bytes));
  }
  const uint8_t* from = file.data() + header->data_offset;
  const int64_t rank = static_cast<int64_t>(header->shape.size());
  if (!header->fortran_order || rank < 2) {
    std::memcpy(out->storage.data(), from, bytes);
    return absl::OkStatus();
  }
  // Fortran order: the first index varies fastest. Walk the C-order
  // output and find each element's place in the file.
  const size_t size = DataTypeSize(header->type);
  std::vector<int64_t> file_stride(rank), index(rank, 0);
  int64_t step = 1;
  for (int64_t a = 0; a < rank; ++a) {
    file_stride[a] = step;
    step *= header->shape[a];
  }
  const int64_t n = ShapeElemCnt(header->shape);
  int64_t at = 0;  // the file's element for `index`
  for (int64_t i = 0; i < n; ++i) {
    std::memcpy(out->storage.data() + i * size, from + at * size, size);
    for (int64_t a = rank - 1; a >= 0; --a) {
      at += file_stride[a];
      if (++index[a] < header->shape[a]) break;
      at -= file_stride[a] * header->shape[a];
      index[a] = 0;
    }
  }
  return absl::OkStatus();
}

namespace {

class NpyDecodeOp final : public SampleOp {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto dtype = ctx.StringAttr("dtype");
    auto max_shape = ctx.IntListAttr("max_shape");
    if (!dtype.ok()) return dtype.status();
    if (!max_shape.ok()) return max_shape.status();
    auto type = ParseDataType(*dtype);
    if (!type.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("attr 'dtype': ", type.status().message()));
    }
    for (int64_t extent : *max_shape) {
      if (extent < 0) {
        return absl::InvalidArgumentError(
            "attr 'max_shape': extents of 0 or more");
      }
    }
    type_ = *type;
    max_shape_ = *max_shape;
    return absl::OkStatus();
  }
  absl::StatusOr<SampleSpec> Infer(const SampleSpec& in) const override {
    if (in.type != DT_UINT8 || in.max_shape.size() != 1) {
      return absl::InvalidArgumentError(absl::StrCat(
          "npy_decode: takes files' bytes (uint8 [bytes]), got ",
          DataTypeName(in.type), " samples of ", ShapeString(in.max_shape)));
    }
    return SampleSpec{type_, {max_shape_.begin(), max_shape_.end()}};
  }
  absl::Status Apply(const SampleRef& in, SampleRng*, Sample* out) override {
    const auto file = absl::MakeConstSpan(in.data, in.bytes);
    auto header = ReadNpyHeader(file);
    if (!header.ok()) return header.status();
    bool fits =
        header->type == type_ && header->shape.size() == max_shape_.size();
    for (size_t a = 0; fits && a < max_shape_.size(); ++a) {
      fits = header->shape[a] <= max_shape_[a];
    }
    if (!fits) {
      return Bad(absl::StrCat("an array of ", DataTypeName(header->type), " ",
                              ShapeString(header->shape),
                              " where the files read when the "
                              "pipeline was defined held ",
                              DataTypeName(type_), " of at most ",
                              ShapeString(max_shape_)));
    }
    return DecodeNpy(file, out);
  }
  bool skippable() const override { return true; }

 private:
  DataType type_ = DT_UINT8;
  std::vector<int64_t> max_shape_;
};

}  // namespace

std::unique_ptr<SampleOp> MakeNpyDecodeOp() {
  return std::make_unique<NpyDecodeOp>();
}

std::vector<std::string> NpyDecodeAttrs() { return {"dtype", "max_shape"}; }

}  // namespace actorflow::internal::pipeline
