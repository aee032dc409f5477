#include "actorflow/blob_desc.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace actorflow {

int64_t ShapeElemCnt(absl::Span<const int64_t> shape) {
  int64_t n = 1;
  for (int64_t dim : shape) n *= dim;
  return n;
}

std::string ShapeString(absl::Span<const int64_t> shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ", "), "]");
}

int64_t BlobDesc::elem_cnt() const { return ShapeElemCnt(shape); }

std::string BlobDesc::ToString() const {
  return absl::StrCat(name, ": ", DataTypeName(data_type), " ",
                      ShapeString(shape), is_dynamic ? " dynamic" : "");
}

bool BlobDesc::operator==(const BlobDesc& other) const {
  return name == other.name && data_type == other.data_type &&
         shape == other.shape && is_dynamic == other.is_dynamic;
}

BlobDesc LegacyBlob(int64_t elem_cnt) {
  return BlobDesc{kLegacyBlobName, DT_FLOAT32, {elem_cnt}, false};
}

absl::StatusOr<std::vector<BlobDesc>> BlobDescsFromProto(
    const RegstDescProto& proto) {
  std::vector<BlobDesc> blobs;
  std::set<std::string> names;
  for (int b = 0; b < proto.blob_size(); ++b) {
    const BlobDescProto& blob = proto.blob(b);
    std::string where = absl::StrCat("blob[", b, "]");
    if (blob.name().empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".name: must not be empty"));
    }
    where = absl::StrCat("blob '", blob.name(), "'");
    if (!names.insert(blob.name()).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".name: duplicate in this register"));
    }
    if (!DataType_IsValid(blob.data_type())) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".data_type: unknown value ", blob.data_type()));
    }
    for (int d = 0; d < blob.shape_size(); ++d) {
      if (blob.shape(d) < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ".shape: dimension ", d, " must be >= 0, got ",
                         blob.shape(d)));
      }
    }
    int64_t bytes = static_cast<int64_t>(DataTypeSize(blob.data_type()));
    for (int64_t dim : blob.shape()) {
      if (__builtin_mul_overflow(bytes, dim, &bytes)) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ".shape: ",
                         ShapeString(std::vector<int64_t>(blob.shape().begin(),
                                                          blob.shape().end())),
                         " is too large to address"));
      }
    }
    blobs.push_back(BlobDesc{blob.name(),
                             blob.data_type(),
                             {blob.shape().begin(), blob.shape().end()},
                             blob.is_dynamic()});
  }
  return blobs;
}

BlobDescProto BlobDescToProto(const BlobDesc& desc) {
  BlobDescProto proto;
  proto.set_name(desc.name);
  proto.set_data_type(desc.data_type);
  for (int64_t dim : desc.shape) proto.add_shape(dim);
  proto.set_is_dynamic(desc.is_dynamic);
  return proto;
}

RegstLayout LayOut(absl::Span<const BlobDesc> blobs) {
  RegstLayout layout;
  for (const BlobDesc& blob : blobs) {
    layout.offsets.push_back(layout.bytes);
    int64_t bytes = blob.byte_size();
    layout.bytes +=
        (bytes + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
  }
  return layout;
}

}  // namespace actorflow
