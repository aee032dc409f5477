#ifndef ACTORFLOW_PYTHON_SRC_PY_ERRORS_H_
#define ACTORFLOW_PYTHON_SRC_PY_ERRORS_H_

#include <pybind11/pybind11.h>

#include <functional>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "python/src/interrupts.h"

// How C++ statuses become Python exceptions, and how a call that may block
// lets go of the GIL and still answers Ctrl-C.
namespace actorflow::internal::python {

namespace py = pybind11;

// Raises the Python exception for `status` (its message unchanged):
// InvalidArgument, NotFound, AlreadyExists -> ValueError; OutOfRange ->
// EOFError; DeadlineExceeded -> TimeoutError; Unimplemented ->
// NotImplementedError; anything else -> RuntimeError.
[[noreturn]] void Throw(const absl::Status& status);

inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) Throw(status);
}

template <typename T>
T ValueOrThrow(absl::StatusOr<T> value) {
  if (!value.ok()) Throw(value.status());
  return *std::move(value);
}

// Whether the calling thread is Python's main thread (the one signal
// handlers run on). GIL held.
bool OnMainThread();

// Runs `op` without the GIL and returns what it returns. On the main
// thread a Ctrl-C while it blocks calls `interrupt` (which must make `op`
// return soon, e.g. by aborting the session; see interrupts.h), and once
// `op` has returned Python's KeyboardInterrupt (or whatever the SIGINT
// handler raises) propagates instead of its result.
template <typename Op>
auto CallBlocking(Op op, std::function<void()> interrupt) -> decltype(op()) {
  if (!OnMainThread()) {
    py::gil_scoped_release nogil;
    return op();
  }
  std::optional<decltype(op())> result;
  {
    InterruptScope scope(std::move(interrupt));
    py::gil_scoped_release nogil;
    result.emplace(op());
  }
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
  return *std::move(result);
}

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_ERRORS_H_
