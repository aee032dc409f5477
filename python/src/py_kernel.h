#ifndef ACTORFLOW_PYTHON_SRC_PY_KERNEL_H_
#define ACTORFLOW_PYTHON_SRC_PY_KERNEL_H_

#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "actorflow/kernel.h"

namespace actorflow::internal::python {

namespace py = pybind11;

// A Python object that may be dropped without the GIL (a kernel's function
// outlives the Python call that bound it: the session frees it on
// whatever thread destroys it).
class GilSafeObject {
 public:
  explicit GilSafeObject(py::object object) : object_(std::move(object)) {}
  ~GilSafeObject() {
    py::gil_scoped_acquire gil;
    object_ = py::object();
  }
  const py::object& get() const { return object_; }

 private:
  py::object object_;
};

// One act of a task whose kernel is a Python callable: takes the GIL, calls
// fn(*inputs) with a read-only copy of every input blob (consumed names in
// order, then each register's blobs) and copies what it returns (an array,
// or a tuple/list of one per output blob) into the outputs. With
// `fills_outputs` it calls fn(*inputs, out=[...]) with writable views of the
// output blobs instead, and its return value is ignored. An exception
// becomes an Internal error carrying its traceback.
absl::Status CallPythonKernel(const GilSafeObject& fn, bool fills_outputs,
                              KernelContext* ctx);

// Keeps the calling thread's Python thread state from one call to the next
// (made and dropped per call it cost about 70 us a call); call it without
// the GIL, before taking it on a runtime thread.
void PinPythonThreadState();

// A Python exception with its traceback, as text (the GIL held).
std::string FormatPythonError(py::error_already_set& error);

// Whether `fn` takes a keyword `out` (then it fills its outputs).
bool TakesOut(const py::object& fn);

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_KERNEL_H_
