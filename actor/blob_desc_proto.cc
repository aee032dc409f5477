#include "actor/blob_desc_proto.h"

#include <set>

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

absl::StatusOr<std::vector<BlobDesc>> BlobDescsFromProto(
    const RegisterDescProto& proto) {
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
    if (!DataTypes::Value_IsValid(blob.data_type())) {
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
    int64_t bytes =
        static_cast<int64_t>(DataTypeSize(ToDataType(blob.data_type())));
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
                             ToDataType(blob.data_type()),
                             {blob.shape().begin(), blob.shape().end()},
                             blob.is_dynamic()});
  }
  return blobs;
}

BlobDescProto BlobDescToProto(const BlobDesc& desc) {
  BlobDescProto proto;
  proto.set_name(desc.name);
  proto.set_data_type(ToProto(desc.data_type));
  for (int64_t dim : desc.shape) proto.add_shape(dim);
  proto.set_is_dynamic(desc.is_dynamic);
  return proto;
}

}  // namespace actorflow::internal
