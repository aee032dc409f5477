#ifndef ACTORFLOW_PYTHON_SRC_PY_SESSION_H_
#define ACTORFLOW_PYTHON_SRC_PY_SESSION_H_

#include <pybind11/pybind11.h>

namespace actorflow::python {

// actorflow.Session and the borrowed pieces it lends (FetchedArray).
void RegisterSessions(pybind11::module_& m);

}  // namespace actorflow::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_SESSION_H_
