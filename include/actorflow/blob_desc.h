#ifndef ACTORFLOW_BLOB_DESC_H_
#define ACTORFLOW_BLOB_DESC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actorflow/data_type.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// What a blob is, as a plan states it or shape inference derives it: a
// name, an element type and a shape. For a dynamic blob the shape is the
// maximum; each piece then has its own shape of the same rank, no
// dimension above the maximum, stored densely from the blob's start.
struct BlobDesc {
  std::string name;
  DataType data_type = DT_FLOAT32;
  std::vector<int64_t> shape;
  bool is_dynamic = false;

  // Elements and bytes at the (maximum) shape.
  int64_t elem_cnt() const;
  int64_t byte_size() const { return elem_cnt() * DataTypeSize(data_type); }
  // "img: uint8 [28, 28, 3] dynamic"
  std::string ToString() const;
  bool operator==(const BlobDesc& other) const;
  bool operator!=(const BlobDesc& other) const { return !(*this == other); }
};

// "[28, 28, 3]"
std::string ShapeString(absl::Span<const int64_t> shape);
int64_t ShapeElemCnt(absl::Span<const int64_t> shape);

// The blob a descriptor with elem_cnt and no blob entries means.
inline constexpr char kLegacyBlobName[] = "data";
BlobDesc LegacyBlob(int64_t elem_cnt);

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_BLOB_DESC_H_
