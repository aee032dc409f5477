#ifndef ACTORFLOW_TENSOR_VIEW_H_
#define ACTORFLOW_TENSOR_VIEW_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actorflow/blob_desc.h"
#include "actorflow/data_type.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// A blob inside one register, as the views below read it: where its
// bytes are and the shape of the piece it holds now. Plain data with a
// fixed layout, part of ACTORFLOW_ABI_VERSION (actorflow/version.h): the
// register that owns it keeps the storage its pointers point into, and
// keeps its own bookkeeping elsewhere. Only the register's current holder
// touches it (the producer while writing, the readers after).
struct Blob {
  char* data = nullptr;  // in the register's memory case
  // The current shape, `rank` entries: the maximum for a static blob, and
  // for a dynamic one whatever its producer set (the maximum until it sets
  // one). The rank never changes.
  int64_t* shape = nullptr;
  const int64_t* max_shape = nullptr;  // `rank` entries
  int64_t elem_cnt = 0;                // of `shape`
  int64_t regst_desc_id = 0;
  const BlobDesc* desc = nullptr;  // read only out of line (name, errors)
  int32_t rank = 0;
  int32_t elem_size = 0;
  DataType data_type = DT_FLOAT32;
  bool is_dynamic = false;
};

// A read-only view of a blob: its type, its shape and its valid elements.
// Typed access checks the element type: asking for another is an error,
// never a reinterpretation. Cheap to copy (one pointer).
class ConstTensorView {
 public:
  ConstTensorView() = default;
  explicit ConstTensorView(Blob* blob) : blob_(blob) {}

  // False for the view of a blob or register that does not exist.
  bool valid() const { return blob_ != nullptr; }
  const std::string& name() const;
  DataType data_type() const { return blob_->data_type; }
  // The piece's shape (the maximum for a static blob).
  absl::Span<const int64_t> shape() const {
    return absl::Span<const int64_t>(blob_->shape, blob_->rank);
  }
  absl::Span<const int64_t> max_shape() const {
    return absl::Span<const int64_t>(blob_->max_shape, blob_->rank);
  }
  bool is_dynamic() const { return blob_->is_dynamic; }
  // Valid elements and bytes: those of shape().
  int64_t elem_cnt() const { return blob_->elem_cnt; }
  int64_t byte_size() const { return blob_->elem_cnt * blob_->elem_size; }
  // Memory of the register's memory case (a device pointer in GPU memory).
  const void* raw_data() const { return blob_->data; }

  // The valid elements as T; an error if the blob holds another type.
  template <typename T>
  absl::StatusOr<absl::Span<const T>> data() const {
    absl::Status ok = CheckType(DataTypeOf<T>::value);
    if (!ok.ok()) return ok;
    return absl::Span<const T>(reinterpret_cast<const T*>(blob_->data),
                               blob_->elem_cnt);
  }

 protected:
  absl::Status CheckType(DataType wanted) const {
    if (__builtin_expect(blob_ != nullptr && data_type() == wanted, 1)) {
      return absl::OkStatus();
    }
    return TypeError(wanted);
  }
  __attribute__((noinline, cold)) absl::Status TypeError(DataType wanted) const;

  Blob* blob_ = nullptr;
};

// A writable view of a blob of a register being produced. A dynamic blob
// starts each act at its maximum shape; set_shape sets the piece's.
class TensorView : public ConstTensorView {
 public:
  TensorView() = default;
  explicit TensorView(Blob* blob) : ConstTensorView(blob) {}

  void* mutable_raw_data() const { return blob_->data; }

  template <typename T>
  absl::StatusOr<absl::Span<T>> mutable_data() const {
    absl::Status ok = CheckType(DataTypeOf<T>::value);
    if (!ok.ok()) return ok;
    return absl::Span<T>(reinterpret_cast<T*>(blob_->data), blob_->elem_cnt);
  }

  // The piece's shape: same rank as the maximum, no dimension above it. A
  // static blob accepts only its own shape.
  absl::Status set_shape(absl::Span<const int64_t> shape) const;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_TENSOR_VIEW_H_
