#ifndef ACTORFLOW_PYTHON_SRC_PY_SESSION_H_
#define ACTORFLOW_PYTHON_SRC_PY_SESSION_H_

#include <pybind11/pybind11.h>

#include "actorflow/session.h"

namespace actorflow::internal::python {

// A checkpoint written or restored, as Python sees it: path, piece, bytes,
// pause_ms, write_ms, and `user` (name -> numpy array) when it has any.
pybind11::dict CheckpointDict(const CheckpointInfo& info);

// actorflow.Session and the borrowed pieces it lends (FetchedArray).
void RegisterSessions(pybind11::module_& m);

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_SESSION_H_
