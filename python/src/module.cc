// The _actorflow extension module: what the `actorflow` package wraps.
// Importing it starts no thread; sessions and pipelines start theirs.
#include <pybind11/pybind11.h>

#include <string>

#include "actorflow/kernel_library.h"
#include "python/src/py_arrays.h"
#include "python/src/py_errors.h"
#include "python/src/py_pipeline.h"
#include "python/src/py_plan.h"
#include "python/src/py_sample_function.h"
#include "python/src/py_session.h"

namespace py = pybind11;

PYBIND11_MODULE(_actorflow, m) {
  m.doc() = "actorflow's runtime, sessions and pipelines (C++)";
  actorflow::internal::python::RegisterPlans(m);
  actorflow::internal::python::RegisterSessions(m);
  actorflow::internal::python::RegisterPipelines(m);
  actorflow::internal::python::RegisterSampleFunctions(m);
  m.def("dtypes", &actorflow::internal::python::DtypeTable,
        "[(actorflow data type name, numpy dtype)] for every data type.");
  m.def(
      "load_kernels",
      [](const std::string& path) {
        actorflow::internal::python::ThrowIfError(
            actorflow::LoadKernelLibrary(path));
      },
      py::arg("path"),
      "Loads a kernel library built outside actorflow (examples/plugin): "
      "its op_types then run in every plan of this process. ValueError if "
      "it cannot be loaded, registers an op_type already registered, or "
      "registers no kernel; loading one twice does nothing.");
  m.def("to_dlpack", &actorflow::internal::python::ToDlpack, py::arg("array"),
        "A DLPack capsule over a C-contiguous host array, keeping it alive.");
}
