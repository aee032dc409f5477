#ifndef ACTORFLOW_BLOB_DESC_H_
#define ACTORFLOW_BLOB_DESC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actorflow/data_type.h"
#include "proto/plan.pb.h"

namespace actorflow {

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

// A plan's blob entry, checked: a name, no repeated name within the
// register, a known data type, dimensions >= 0. Errors name the blob and
// the field; the caller adds the task and the register.
absl::StatusOr<std::vector<BlobDesc>> BlobDescsFromProto(
    const RegstDescProto& proto);
BlobDescProto BlobDescToProto(const BlobDesc& desc);

// Where each blob starts in a register's one allocation: every blob
// aligned to kBlobAlignment bytes.
inline constexpr int64_t kBlobAlignment = 64;
struct RegstLayout {
  std::vector<int64_t> offsets;  // per blob
  int64_t bytes = 0;             // the whole register
};
RegstLayout LayOut(absl::Span<const BlobDesc> blobs);

}  // namespace actorflow

#endif  // ACTORFLOW_BLOB_DESC_H_
