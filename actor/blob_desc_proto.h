#ifndef ACTORFLOW_ACTOR_BLOB_DESC_PROTO_H_
#define ACTORFLOW_ACTOR_BLOB_DESC_PROTO_H_

#include <vector>

#include "absl/status/statusor.h"
#include "actorflow/blob_desc.h"
#include "actorflow/data_type.h"
#include "proto/plan.pb.h"

// Where the plan format (plan.proto) meets the kernel API's blob types,
// which know nothing of protobuf: element types and blob descriptions.
namespace actorflow::internal {

static_assert(DT_FLOAT32 == static_cast<int>(DataTypes::DT_FLOAT32) &&
                  DT_FLOAT64 == static_cast<int>(DataTypes::DT_FLOAT64) &&
                  DT_INT8 == static_cast<int>(DataTypes::DT_INT8) &&
                  DT_UINT8 == static_cast<int>(DataTypes::DT_UINT8) &&
                  DT_INT32 == static_cast<int>(DataTypes::DT_INT32) &&
                  DT_INT64 == static_cast<int>(DataTypes::DT_INT64) &&
                  DT_BOOL == static_cast<int>(DataTypes::DT_BOOL),
              "DataType must keep plan.proto's numbers");

// Only for values already checked (DataTypes::Value_IsValid): the two
// enums have the same values.
inline DataType ToDataType(DataTypes::Value value) {
  return static_cast<DataType>(value);
}
inline DataTypes::Value ToProto(DataType type) {
  return static_cast<DataTypes::Value>(type);
}

// A plan's blob entries, checked: a name, no repeated name within the
// register, a known data type, dimensions >= 0. Errors name the blob and
// the field; the caller adds the task and the register.
absl::StatusOr<std::vector<BlobDesc>> BlobDescsFromProto(
    const RegisterDescProto& proto);
BlobDescProto BlobDescToProto(const BlobDesc& desc);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_BLOB_DESC_PROTO_H_
