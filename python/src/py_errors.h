#ifndef ACTORFLOW_PYTHON_SRC_PY_ERRORS_H_
#define ACTORFLOW_PYTHON_SRC_PY_ERRORS_H_

#include <pybind11/pybind11.h>

#include <chrono>
#include <functional>
#include <future>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// How C++ statuses become Python exceptions, and how a call that may block
// lets go of the GIL and still answers Ctrl-C.
namespace actorflow::python {

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

// Runs `op` without the GIL and returns what it returns. On the main thread
// `op` runs on a helper thread while this one checks for signals every
// 100 ms: when a handler raises (Ctrl-C: KeyboardInterrupt), `interrupt` is
// called (it must make `op` return soon, e.g. by aborting the session),
// `op` is waited for, and the handler's exception propagates. Elsewhere
// `op` simply runs here.
template <typename Op>
auto CallBlocking(Op op, const std::function<void()>& interrupt)
    -> decltype(op()) {
  using Result = decltype(op());
  if (!OnMainThread()) {
    py::gil_scoped_release nogil;
    return op();
  }
  std::packaged_task<Result()> task(std::move(op));
  std::future<Result> result = task.get_future();
  std::thread worker(std::move(task));
  bool interrupted = false;
  {
    py::gil_scoped_release nogil;
    while (result.wait_for(std::chrono::milliseconds(100)) !=
           std::future_status::ready) {
      py::gil_scoped_acquire gil;
      if (PyErr_CheckSignals() != 0) {
        interrupted = true;
        break;
      }
    }
    if (interrupted) {
      // The handler's exception is set; keep it while the work winds down.
      PyObject *type, *value, *trace;
      {
        py::gil_scoped_acquire gil;
        PyErr_Fetch(&type, &value, &trace);
      }
      interrupt();
      worker.join();
      py::gil_scoped_acquire gil;
      PyErr_Restore(type, value, trace);
    } else {
      worker.join();
    }
  }
  if (interrupted) throw py::error_already_set();
  return result.get();
}

}  // namespace actorflow::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_ERRORS_H_
