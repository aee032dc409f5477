#include "actorflow/data_type.h"

#include "absl/strings/str_cat.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace {

constexpr DataType kAll[] = {DT_FLOAT32, DT_FLOAT64, DT_INT8, DT_UINT8,
                             DT_INT32,   DT_INT64,   DT_BOOL};

}  // namespace

size_t DataTypeSize(DataType type) {
  return VisitDataType(
      type, [](auto tag) { return sizeof(typename decltype(tag)::type); });
}

const char* DataTypeName(DataType type) {
  switch (type) {
    case DT_FLOAT32:
      return "float32";
    case DT_FLOAT64:
      return "float64";
    case DT_INT8:
      return "int8";
    case DT_UINT8:
      return "uint8";
    case DT_INT32:
      return "int32";
    case DT_INT64:
      return "int64";
    case DT_BOOL:
      return "bool";
    default:
      return "unknown";
  }
}

absl::StatusOr<DataType> ParseDataType(absl::string_view name) {
  for (DataType type : kAll) {
    if (name == DataTypeName(type)) return type;
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown data type '", name,
      "' (known: float32, float64, int8, uint8, int32, int64, bool)"));
}

bool IsFloatingType(DataType type) {
  return type == DT_FLOAT32 || type == DT_FLOAT64;
}

const DataType* AllDataTypes(int* count) {
  *count = static_cast<int>(sizeof(kAll) / sizeof(kAll[0]));
  return kAll;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
