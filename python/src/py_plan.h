#ifndef ACTORFLOW_PYTHON_SRC_PY_PLAN_H_
#define ACTORFLOW_PYTHON_SRC_PY_PLAN_H_

#include <pybind11/pybind11.h>

#include <map>
#include <string>

#include "actorflow/kernel.h"
#include "proto/plan.pb.h"

namespace actorflow::internal::python {

namespace py = pybind11;

// A Plan from what Python code passes for one: a Plan object, a path to a
// .pbtxt/.pb file, or the text of a plan. ValueError otherwise.
Plan PlanFrom(const py::handle& plan_like);

// Sinks' summaries as the CLI's JSON has them: {name: {pieces, checksum,
// in_order}}, a whole checksum as an int.
py::dict SinksDict(const std::map<std::string, SinkSummary>& sinks);

// actorflow.Plan, load_plan, validate, dot, run.
void RegisterPlans(py::module_& m);

}  // namespace actorflow::internal::python

#endif  // ACTORFLOW_PYTHON_SRC_PY_PLAN_H_
