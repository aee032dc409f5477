#ifndef ACTORFLOW_PYTHON_SRC_PY_PIPELINE_H_
#define ACTORFLOW_PYTHON_SRC_PY_PIPELINE_H_

#include <pybind11/pybind11.h>

namespace actorflow::internal::python {

// _actorflow._Pipeline: the C++ Pipeline as actorflow.pipeline drives it.
void RegisterPipelines(pybind11::module_& m);

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_PIPELINE_H_
