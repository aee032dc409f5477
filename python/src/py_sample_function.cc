#include "python/src/py_sample_function.h"

#include <pybind11/numpy.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/sample_function.h"
#include "python/src/py_arrays.h"
#include "python/src/py_kernel.h"

namespace actorflow::internal::python {

namespace {

using pipeline::Sample;
using pipeline::SampleRef;

// fn(*inputs) with a fresh numpy array per input sample (the caller may keep
// them); what it returns, an array (or anything numpy makes one of) per
// output, is copied into the outputs.
class PythonSampleFunction final : public pipeline::SampleFunction {
 public:
  explicit PythonSampleFunction(py::object fn) : fn_(std::move(fn)) {}

  absl::Status Call(absl::Span<const SampleRef> inputs,
                    absl::Span<Sample> outputs) const override {
    PinPythonThreadState();
    py::gil_scoped_acquire gil;
    try {
      py::tuple args(inputs.size());
      for (size_t k = 0; k < inputs.size(); ++k) {
        const SampleRef& in = inputs[k];
        py::array array(
            DtypeOf(in.type),
            std::vector<py::ssize_t>(in.shape.begin(), in.shape.end()));
        if (in.bytes > 0) {
          std::memcpy(array.mutable_data(), in.data,
                      static_cast<size_t>(in.bytes));
        }
        args[k] = array;
      }
      py::object result = fn_.get()(*args);
      std::vector<py::object> results;
      if (outputs.size() == 1) {
        results.push_back(result);
      } else if (py::isinstance<py::tuple>(result) ||
                 py::isinstance<py::list>(result)) {
        for (const auto& item : result) {
          results.push_back(py::reinterpret_borrow<py::object>(item));
        }
      }
      if (results.size() != outputs.size()) {
        const std::string type =
            py::str(py::type::of(result)).cast<std::string>();
        return absl::InvalidArgumentError(
            results.empty()
                ? absl::StrCat("the function returned ", type,
                               ", not a tuple or list of ", outputs.size(),
                               " values (num_outputs)")
                : absl::StrCat("the function returned ", results.size(),
                               " values for ", outputs.size(),
                               " outputs (num_outputs)"));
      }
      for (size_t o = 0; o < outputs.size(); ++o) {
        py::array array =
            py::module_::import("numpy").attr("ascontiguousarray")(results[o]);
        DataType type;
        try {
          type = DataTypeOfDtype(array.dtype(),
                                 absl::StrCat("output ", o).c_str());
        } catch (const std::exception& error) {
          return absl::InvalidArgumentError(error.what());
        }
        std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
        outputs[o].Reshape(type, shape);
        if (outputs[o].bytes() > 0) {
          std::memcpy(outputs[o].storage.data(), array.data(),
                      outputs[o].storage.size());
        }
      }
      return absl::OkStatus();
    } catch (py::error_already_set& error) {
      return absl::InvalidArgumentError(
          absl::StrCat("the function raised:\n", FormatPythonError(error)));
    }
  }

 private:
  GilSafeObject fn_;
};

}  // namespace

void RegisterSampleFunctions(py::module_& m) {
  m.def(
      "_register_sample_function",
      [](py::object fn) {
        return pipeline::RegisterSampleFunction(
            std::make_shared<PythonSampleFunction>(std::move(fn)));
      },
      py::arg("fn"),
      "Registers fn for the pipeline's `function` operator; returns its id.");
  m.def("_unregister_sample_function", &pipeline::UnregisterSampleFunction,
        py::arg("id"),
        "Forgets the function (stages built with it keep it until they go).");
}

}  // namespace actorflow::internal::python
