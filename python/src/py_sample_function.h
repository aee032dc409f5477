#ifndef ACTORFLOW_PYTHON_SRC_PY_SAMPLE_FUNCTION_H_
#define ACTORFLOW_PYTHON_SRC_PY_SAMPLE_FUNCTION_H_

#include <pybind11/pybind11.h>

namespace actorflow::internal::python {

// _register_sample_function(fn) -> id and _unregister_sample_function(id):
// Python callables as the pipeline's `function` operator calls them
// (pipeline/sample_function.h).
void RegisterSampleFunctions(pybind11::module_& m);

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_SAMPLE_FUNCTION_H_
