#ifndef ACTORFLOW_DATA_TYPE_H_
#define ACTORFLOW_DATA_TYPE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <type_traits>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "actorflow/version.h"

// Element types of blobs and their C++ types.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// What a blob's elements are. The same names and numbers as the plan
// format's DataTypes.Value (plan.proto), which the runtime converts at the
// edge; this header needs nothing of protobuf.
enum DataType : int32_t {
  DT_FLOAT32 = 0,
  DT_FLOAT64 = 1,
  DT_INT8 = 2,
  DT_UINT8 = 3,
  DT_INT32 = 4,
  DT_INT64 = 5,
  DT_BOOL = 6,
};

// Bytes per element.
size_t DataTypeSize(DataType type);
// "float32", "uint8", ...: the enum's name in lower case without "DT_".
const char* DataTypeName(DataType type);
// The inverse of DataTypeName; an error listing the names otherwise.
absl::StatusOr<DataType> ParseDataType(absl::string_view name);
bool IsFloatingType(DataType type);
// Every value of the enum, in enum order.
const DataType* AllDataTypes(int* count);

// The DataType of a C++ element type: DataTypeOf<float>::value == DT_FLOAT32.
template <typename T>
struct DataTypeOf;
#define ACTORFLOW_DATA_TYPE_OF(T, dt)     \
  template <>                             \
  struct DataTypeOf<T> {                  \
    static constexpr DataType value = dt; \
  }
ACTORFLOW_DATA_TYPE_OF(float, DT_FLOAT32);
ACTORFLOW_DATA_TYPE_OF(double, DT_FLOAT64);
ACTORFLOW_DATA_TYPE_OF(int8_t, DT_INT8);
ACTORFLOW_DATA_TYPE_OF(uint8_t, DT_UINT8);
ACTORFLOW_DATA_TYPE_OF(int32_t, DT_INT32);
ACTORFLOW_DATA_TYPE_OF(int64_t, DT_INT64);
ACTORFLOW_DATA_TYPE_OF(bool, DT_BOOL);
#undef ACTORFLOW_DATA_TYPE_OF

template <typename T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) with T the C++ type of `type`, and returns what it
// returns:  VisitDataType(t, [&](auto tag) { using T = typename
// decltype(tag)::type; ... });
template <typename Fn>
decltype(auto) VisitDataType(DataType type, Fn&& fn) {
  switch (type) {
    case DT_FLOAT64:
      return fn(TypeTag<double>{});
    case DT_INT8:
      return fn(TypeTag<int8_t>{});
    case DT_UINT8:
      return fn(TypeTag<uint8_t>{});
    case DT_INT32:
      return fn(TypeTag<int32_t>{});
    case DT_INT64:
      return fn(TypeTag<int64_t>{});
    case DT_BOOL:
      return fn(TypeTag<bool>{});
    default:  // DT_FLOAT32; plans are validated before anything visits
      return fn(TypeTag<float>{});
  }
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_DATA_TYPE_H_
