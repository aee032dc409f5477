#include "python/src/py_kernel.h"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "python/src/py_arrays.h"

namespace actorflow::internal::python {

std::string FormatPythonError(py::error_already_set& error) {
  std::string text;
  try {
    py::object format =
        py::module_::import("traceback").attr("format_exception");
    py::list lines = format(error.type(), error.value(), error.trace());
    for (const auto& line : lines) text += line.cast<std::string>();
  } catch (const py::error_already_set&) {
    text = error.what();
  }
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

namespace {

// Copies `result` into output blob `view` ("output k ('name')"). Errors
// are Internal, as every failure of a Python kernel: the run failed.
absl::Status StoreOutput(const py::handle& result, const TensorView& view,
                         const std::string& where) {
  py::array array;
  try {
    array = py::array::ensure(result, py::array::c_style);
  } catch (const py::error_already_set&) {
  }
  if (!array) {
    PyErr_Clear();
    return absl::InternalError(absl::StrCat(
        where, ": the function returned ",
        py::str(py::type::of(result)).cast<std::string>(), ", not an array"));
  }
  const py::dtype wanted = DtypeOf(view.data_type());
  std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
  if (!array.dtype().equal(wanted)) {
    return absl::InternalError(
        absl::StrCat(where, " wants ", DataTypeName(view.data_type()), " ",
                     ShapeString(view.max_shape()), ", the function returned ",
                     py::str(py::handle(array.dtype())).cast<std::string>(),
                     " ", ShapeString(shape)));
  }
  if (view.is_dynamic()) {
    absl::Status shaped = view.set_shape(shape);
    if (!shaped.ok()) {
      return absl::InternalError(absl::StrCat(where, ": ", shaped.message()));
    }
  } else if (absl::Span<const int64_t>(shape) != view.shape()) {
    return absl::InternalError(
        absl::StrCat(where, " wants shape ", ShapeString(view.shape()),
                     ", the function returned ", ShapeString(shape)));
  }
  if (view.byte_size() > 0) {
    std::memcpy(view.mutable_raw_data(), array.data(), view.byte_size());
  }
  return absl::OkStatus();
}

// Keeps a runtime thread's Python thread state from one kernel call to the
// next: made and dropped per call (what taking the GIL on a thread without
// one does) it cost about 70 us a call. Made without the GIL held; dropped
// when the thread ends (runtime threads are joined without the GIL), unless
// the interpreter is already shutting down.
class ThreadStatePin {
 public:
  ThreadStatePin() {
    state_ = PyGILState_Ensure();
    thread_state_ = PyEval_SaveThread();
  }
  ~ThreadStatePin() {
    if (_Py_IsFinalizing()) return;
    PyEval_RestoreThread(thread_state_);
    PyGILState_Release(state_);
  }

 private:
  PyGILState_STATE state_;
  PyThreadState* thread_state_;
};

}  // namespace

bool TakesOut(const py::object& fn) {
  try {
    py::object signature = py::module_::import("inspect").attr("signature")(fn);
    return signature.attr("parameters").contains("out");
  } catch (const py::error_already_set&) {
    return false;  // builtins without a signature: plain functions
  }
}

void PinPythonThreadState() {
  thread_local std::optional<ThreadStatePin> pin;
  if (!pin) pin.emplace();
}

absl::Status CallPythonKernel(const GilSafeObject& fn, bool fills_outputs,
                              KernelContext* ctx) {
  PinPythonThreadState();
  py::gil_scoped_acquire gil;
  try {
    py::list args;
    for (int i = 0; i < ctx->num_inputs(); ++i) {
      ConstRegisterView reg = ctx->input(i);
      for (int b = 0; b < reg.num_blobs(); ++b) {
        ConstTensorView blob = reg.blob(b);
        Tensor copy(blob.data_type(), std::vector<int64_t>(blob.shape().begin(),
                                                           blob.shape().end()));
        if (blob.byte_size() > 0) {
          std::memcpy(copy.mutable_raw_data(), blob.raw_data(),
                      blob.byte_size());
        }
        py::array array = ArrayFromTensor(std::move(copy));
        py::detail::array_proxy(array.ptr())->flags &=
            ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
        args.append(array);
      }
    }
    std::vector<TensorView> outputs;
    std::vector<std::string> names;
    for (int o = 0; o < ctx->num_outputs(); ++o) {
      RegisterView reg = ctx->output(o);
      for (int b = 0; b < reg.num_blobs(); ++b) {
        outputs.push_back(reg.blob(b));
        names.push_back(reg.blob(b).name());
      }
    }
    if (fills_outputs) {
      py::list out;
      // The registers own the memory; the views are for this call only.
      py::object owner = py::str("actorflow kernel output");
      for (const TensorView& view : outputs) {
        out.append(ViewOf(view, owner, /*writable=*/true));
      }
      fn.get()(*py::tuple(args), py::arg("out") = out);
      return absl::OkStatus();
    }
    py::object result = fn.get()(*py::tuple(args));
    std::vector<py::handle> results;
    if (py::isinstance<py::tuple>(result) || py::isinstance<py::list>(result)) {
      for (const auto& item : result) results.push_back(item);
    } else if (!result.is_none()) {
      results.push_back(result);
    }
    if (results.size() != outputs.size()) {
      return absl::InternalError(absl::StrCat("the Python kernel returned ",
                                              results.size(), " arrays for ",
                                              outputs.size(), " output blobs"));
    }
    for (size_t k = 0; k < outputs.size(); ++k) {
      absl::Status stored =
          StoreOutput(results[k], outputs[k],
                      absl::StrCat("output ", k, " ('", names[k], "')"));
      if (!stored.ok()) return stored;
    }
    return absl::OkStatus();
  } catch (py::error_already_set& error) {
    return absl::InternalError(
        absl::StrCat("the Python kernel raised:\n", FormatPythonError(error)));
  }
}

}  // namespace actorflow::internal::python
