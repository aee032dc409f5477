#ifndef ACTORFLOW_PYTHON_SRC_PY_ARRAYS_H_
#define ACTORFLOW_PYTHON_SRC_PY_ARRAYS_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "actorflow/data_type.h"
#include "actorflow/tensor.h"
#include "actorflow/tensor_view.h"

// Arrays between numpy and actorflow: the data type table, copies both
// ways, views of memory actorflow owns, and DLPack capsules.
namespace actorflow::internal::python {

namespace py = pybind11;

// The numpy dtype of a data type (the table is one to one).
py::dtype DtypeOf(DataType type);
// The data type of a numpy dtype; ValueError naming the dtypes there are.
DataType DataTypeOfDtype(const py::dtype& dtype, const char* what);
// [(name, numpy dtype)] for every data type, in enum order.
py::list DtypeTable();

// A copy of `array` (any layout) whose dtype must map to a data type.
Tensor TensorFromArray(const py::array& array, const char* what);
// A numpy array that takes `tensor` over (no copy of its data).
py::array ArrayFromTensor(Tensor tensor);
// A numpy array over memory someone else owns: `base` keeps it alive.
py::array ViewOf(DataType type, absl::Span<const int64_t> shape,
                 const void* data, py::handle base, bool writable);
inline py::array ViewOf(const ConstTensorView& view, py::handle base,
                        bool writable) {
  return ViewOf(view.data_type(), view.shape(), view.raw_data(), base,
                writable);
}

// A writable numpy array over `taken`'s bytes, which it keeps alive (a
// capsule holding its owner is the array's base).
py::array ArrayOwning(TakenTensor taken);

// A "dltensor" capsule over a C-contiguous numpy array on the host,
// which it keeps alive until the consumer (torch.from_dlpack) frees it.
py::capsule ToDlpack(const py::array& array);

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_ARRAYS_H_
