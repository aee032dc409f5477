#include "actorflow/blob_desc.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

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

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
