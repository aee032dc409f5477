#ifndef ACTORFLOW_TENSOR_H_
#define ACTORFLOW_TENSOR_H_

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "actorflow/blob_desc.h"
#include "actorflow/data_type.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// A host tensor owned by the caller: what Session::Feed takes and
// Session::Fetch returns. Elements are dense and row-major; typed access
// checks the element type, as kernels' views do.
class Tensor {
 public:
  Tensor() = default;
  // Zero-filled.
  Tensor(DataType type, std::vector<int64_t> shape)
      : type_(type),
        shape_(std::move(shape)),
        storage_((ShapeElemCnt(shape_) * DataTypeSize(type) + 7) / 8) {}

  // A tensor of `shape` holding `values` (as many as the shape has).
  template <typename T>
  static absl::StatusOr<Tensor> FromValues(std::vector<int64_t> shape,
                                           absl::Span<const T> values) {
    Tensor tensor(DataTypeOf<T>::value, std::move(shape));
    if (tensor.elem_cnt() != static_cast<int64_t>(values.size())) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor of shape ", ShapeString(tensor.shape()), " holds ",
          tensor.elem_cnt(), " elements, got ", values.size(), " values"));
    }
    if (!values.empty()) {
      std::memcpy(tensor.mutable_raw_data(), values.data(),
                  values.size() * sizeof(T));
    }
    return tensor;
  }

  DataType data_type() const { return type_; }
  absl::Span<const int64_t> shape() const { return shape_; }
  int64_t elem_cnt() const { return ShapeElemCnt(shape_); }
  int64_t byte_size() const {
    return elem_cnt() * static_cast<int64_t>(DataTypeSize(type_));
  }
  const void* raw_data() const { return storage_.data(); }
  void* mutable_raw_data() { return storage_.data(); }

  template <typename T>
  absl::StatusOr<absl::Span<const T>> data() const {
    if (DataTypeOf<T>::value != type_) return TypeError(DataTypeOf<T>::value);
    return absl::Span<const T>(reinterpret_cast<const T*>(storage_.data()),
                               elem_cnt());
  }
  template <typename T>
  absl::StatusOr<absl::Span<T>> mutable_data() {
    if (DataTypeOf<T>::value != type_) return TypeError(DataTypeOf<T>::value);
    return absl::Span<T>(reinterpret_cast<T*>(storage_.data()), elem_cnt());
  }

 private:
  absl::Status TypeError(DataType wanted) const {
    return absl::InvalidArgumentError(
        absl::StrCat("tensor holds ", DataTypeName(type_), ", asked for ",
                     DataTypeName(wanted)));
  }

  DataType type_ = DT_FLOAT32;
  std::vector<int64_t> shape_;
  std::vector<uint64_t> storage_;  // 8-byte aligned for every element type
};

// A fetched blob's bytes handed over to the caller
// (FetchedTensor::TakeOver, Pipeline::TakeOutputs): they stay valid, and
// nothing of the plan's writes them, for as long as `owner` or any copy of
// it lives, whatever becomes of the session.
struct TakenTensor {
  std::shared_ptr<const void> owner;
  const void* data = nullptr;
  DataType data_type = DT_FLOAT32;
  std::vector<int64_t> shape;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_TENSOR_H_
