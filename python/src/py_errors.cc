#include "python/src/py_errors.h"

#include <string>

namespace actorflow::internal::python {

void Throw(const absl::Status& status) {
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
      type = PyExc_ValueError;
      break;
    case absl::StatusCode::kOutOfRange:
      type = PyExc_EOFError;
      break;
    case absl::StatusCode::kDeadlineExceeded:
      type = PyExc_TimeoutError;
      break;
    case absl::StatusCode::kUnimplemented:
      type = PyExc_NotImplementedError;
      break;
    default:
      break;
  }
  PyErr_SetString(type, std::string(status.message()).c_str());
  throw py::error_already_set();
}

bool OnMainThread() {
  static const unsigned long main_ident = [] {
    return py::module_::import("threading")
        .attr("main_thread")()
        .attr("ident")
        .cast<unsigned long>();
  }();
  return PyThread_get_thread_ident() == main_ident;
}

}  // namespace actorflow::internal::python
