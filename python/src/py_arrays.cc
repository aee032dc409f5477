#include "python/src/py_arrays.h"

#include <cstring>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "python/src/dlpack.h"
#include "python/src/py_errors.h"

namespace actorflow::internal::python {

namespace {

// Every data type, in enum order. Each one's name (DataTypeName) is also
// its numpy dtype's name, which makes the table.
std::vector<DataType> AllTypes() {
  int count = 0;
  const DataType* all = AllDataTypes(&count);
  return std::vector<DataType>(all, all + count);
}

DLDataType DlTypeOf(DataType type) {
  DLDataType dl;
  dl.lanes = 1;
  dl.bits = static_cast<uint8_t>(DataTypeSize(type) * 8);
  switch (type) {
    case DT_FLOAT32:
    case DT_FLOAT64:
      dl.code = kDLFloat;
      break;
    case DT_UINT8:
      dl.code = kDLUInt;
      break;
    case DT_BOOL:  // PyTorch 1.13 reads DLPack without a bool code
      dl.code = kDLUInt;
      break;
    default:
      dl.code = kDLInt;
  }
  return dl;
}

// What a capsule's DLManagedTensor points at: the shape and strides it
// lends, and the array whose memory it is.
struct DlpackOwner {
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  PyObject* array = nullptr;  // a reference
  DLManagedTensor managed;
};

void DeleteManaged(DLManagedTensor* managed) {
  auto* owner = static_cast<DlpackOwner*>(managed->manager_ctx);
  // Consumers may free it on any thread, with or without the GIL.
  PyGILState_STATE state = PyGILState_Ensure();
  Py_XDECREF(owner->array);
  PyGILState_Release(state);
  delete owner;
}

// A capsule nobody consumed still owns its tensor.
void DeleteUnconsumedCapsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    auto* managed = static_cast<DLManagedTensor*>(
        PyCapsule_GetPointer(capsule, "dltensor"));
    managed->deleter(managed);
  }
}

}  // namespace

py::dtype DtypeOf(DataType type) { return py::dtype(DataTypeName(type)); }

DataType DataTypeOfDtype(const py::dtype& dtype, const char* what) {
  std::vector<std::string> names;
  for (DataType type : AllTypes()) {
    if (DtypeOf(type).equal(dtype)) return type;
    names.push_back(DataTypeName(type));
  }
  Throw(absl::InvalidArgumentError(absl::StrCat(
      what, ": numpy dtype ", py::str(py::handle(dtype)).cast<std::string>(),
      " has no actorflow data type (these do: ", absl::StrJoin(names, ", "),
      ")")));
}

py::list DtypeTable() {
  py::list table;
  for (DataType type : AllTypes()) {
    table.append(py::make_tuple(DataTypeName(type), DtypeOf(type)));
  }
  return table;
}

Tensor TensorFromArray(const py::array& array, const char* what) {
  const DataType type = DataTypeOfDtype(array.dtype(), what);
  auto dense = py::array::ensure(array, py::array::c_style);
  if (!dense) throw py::error_already_set();
  std::vector<int64_t> shape(dense.shape(), dense.shape() + dense.ndim());
  Tensor tensor(type, std::move(shape));
  if (tensor.byte_size() > 0) {
    std::memcpy(tensor.mutable_raw_data(), dense.data(), tensor.byte_size());
  }
  return tensor;
}

py::array ArrayFromTensor(Tensor tensor) {
  auto* owned = new Tensor(std::move(tensor));
  py::capsule base(owned, [](void* p) { delete static_cast<Tensor*>(p); });
  return ViewOf(owned->data_type(), owned->shape(), owned->raw_data(), base,
                /*writable=*/true);
}

py::array ViewOf(DataType type, absl::Span<const int64_t> shape,
                 const void* data, py::handle base, bool writable) {
  std::vector<py::ssize_t> dims(shape.begin(), shape.end());
  std::vector<py::ssize_t> strides(dims.size());
  py::ssize_t stride = static_cast<py::ssize_t>(DataTypeSize(type));
  for (size_t k = dims.size(); k-- > 0;) {
    strides[k] = stride;
    stride *= dims[k];
  }
  py::array array(DtypeOf(type), dims, strides, data, base);
  if (!writable) {
    py::detail::array_proxy(array.ptr())->flags &=
        ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  }
  return array;
}

py::array ArrayOwning(TakenTensor taken) {
  auto* owner = new std::shared_ptr<const void>(std::move(taken.owner));
  py::capsule base(owner, [](void* p) {
    delete static_cast<std::shared_ptr<const void>*>(p);
  });
  return ViewOf(taken.data_type, taken.shape, taken.data, base,
                /*writable=*/true);
}

py::capsule ToDlpack(const py::array& array) {
  if (!(array.flags() & py::array::c_style)) {
    Throw(absl::InvalidArgumentError(
        "__dlpack__: only C-contiguous arrays are exported"));
  }
  auto owner = std::make_unique<DlpackOwner>();
  const DataType type = DataTypeOfDtype(array.dtype(), "__dlpack__");
  owner->shape.assign(array.shape(), array.shape() + array.ndim());
  owner->strides.resize(owner->shape.size());
  int64_t stride = 1;
  for (size_t k = owner->shape.size(); k-- > 0;) {
    owner->strides[k] = stride;
    stride *= owner->shape[k];
  }
  owner->array = array.ptr();
  Py_INCREF(owner->array);
  DLTensor& dl = owner->managed.dl_tensor;
  dl.data = const_cast<void*>(array.data());
  dl.device = DLDevice{kDLCPU, 0};
  dl.ndim = static_cast<int32_t>(owner->shape.size());
  dl.dtype = DlTypeOf(type);
  dl.shape = owner->shape.data();
  dl.strides = owner->strides.data();
  dl.byte_offset = 0;
  owner->managed.manager_ctx = owner.get();
  owner->managed.deleter = DeleteManaged;
  DLManagedTensor* managed = &owner.release()->managed;
  PyObject* capsule =
      PyCapsule_New(managed, "dltensor", DeleteUnconsumedCapsule);
  if (capsule == nullptr) {
    managed->deleter(managed);
    throw py::error_already_set();
  }
  return py::reinterpret_steal<py::capsule>(capsule);
}

}  // namespace actorflow::internal::python
