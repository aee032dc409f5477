// The _actorflow extension module: what the `actorflow` package wraps.
// Importing it starts no thread; sessions and pipelines start theirs.
#include <pybind11/pybind11.h>

#include "python/src/py_arrays.h"
#include "python/src/py_pipeline.h"
#include "python/src/py_plan.h"
#include "python/src/py_session.h"

namespace py = pybind11;

PYBIND11_MODULE(_actorflow, m) {
  m.doc() = "actorflow's runtime, sessions and pipelines (C++)";
  actorflow::python::RegisterPlans(m);
  actorflow::python::RegisterSessions(m);
  actorflow::python::RegisterPipelines(m);
  m.def("dtypes", &actorflow::python::DtypeTable,
        "[(actorflow data type name, numpy dtype)] for every data type.");
  m.def("to_dlpack", &actorflow::python::ToDlpack, py::arg("array"),
        "A DLPack capsule over a C-contiguous host array, keeping it alive.");
}
