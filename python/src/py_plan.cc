#include "python/src/py_plan.h"

#include <pybind11/stl.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/job_compiler.h"
#include "actorflow/plan_loader.h"
#include "actorflow/plan_validator.h"
#include "actorflow/session.h"
#include "compiler/plan_or_job.h"
#include "google/protobuf/text_format.h"
#include "plan/plan_dot.h"
#include "python/src/py_errors.h"

namespace actorflow::internal::python {

namespace {

bool LooksLikePath(const std::string& text) {
  return text.find('\n') == std::string::npos &&
         text.find('{') == std::string::npos;
}

// A job's text compiled (errors name the operator).
Plan CompileJobText(const std::string& text) {
  Job job;
  ThrowIfError(ParseTextMessage(text, "<job text>", &job));
  return ValueOrThrow(CompileJob(job)).plan;
}

// A path (plan or job file) or a plan's or job's text.
Plan LoadPlanLike(const std::string& path_or_text) {
  if (LooksLikePath(path_or_text)) {
    return ValueOrThrow(LoadPlanOrJob(path_or_text)).plan;
  }
  if (LooksLikeJob(path_or_text)) return CompileJobText(path_or_text);
  return ValueOrThrow(ParseTextPlan(path_or_text, "<plan text>"));
}

std::string PlanText(const Plan& plan) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(plan, &text);
  return text;
}

absl::Status SavePlan(const Plan& plan, const std::string& path) {
  const bool binary =
      absl::EndsWith(path, ".pb") || absl::EndsWith(path, ".bin");
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out << (binary ? plan.SerializeAsString() : PlanText(plan));
  out.close();
  if (!out) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot write: ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

// The `actorflow run` command's JSON summary, as a dict.
py::dict RunPlanOnce(const py::handle& plan_like, py::object pieces,
                     py::object timeout) {
  Plan plan = PlanFrom(plan_like);
  SessionOptions options;
  if (!timeout.is_none()) {
    const double seconds = timeout.cast<double>();
    if (!(seconds > 0)) {
      Throw(absl::InvalidArgumentError(
          absl::StrCat("run: timeout must be > 0 seconds, got ", seconds)));
    }
    options.timeout = absl::Seconds(seconds);
  }
  const int64_t count = pieces.is_none() ? -1 : pieces.cast<int64_t>();
  std::unique_ptr<Session> session;
  {
    py::gil_scoped_release nogil;
    auto created = Session::Create(std::move(plan), std::move(options));
    if (!created.ok()) {
      py::gil_scoped_acquire gil;
      Throw(created.status());
    }
    session = *std::move(created);
  }
  Session* raw = session.get();
  auto stats = CallBlocking(
      [raw, count] { return raw->Run(count); },
      [raw] { raw->Abort(absl::CancelledError("interrupted (Ctrl-C)")); });
  std::map<std::string, SinkSummary> sinks = session->Sinks();
  {
    py::gil_scoped_release nogil;
    session.reset();
  }
  if (!stats.ok()) Throw(stats.status());
  py::dict summary;
  summary["status"] = "ok";
  summary["pieces"] = stats->pieces;
  summary["wall_ms"] = stats->wall_ms;
  summary["sinks"] = SinksDict(sinks);
  return summary;
}

}  // namespace

// An int where the sum is whole (as the CLI's JSON prints it).
py::object ChecksumValue(double checksum) {
  if (std::isfinite(checksum) && std::trunc(checksum) == checksum &&
      std::fabs(checksum) < 9.0e15) {
    return py::int_(static_cast<int64_t>(checksum));
  }
  return py::float_(checksum);
}

py::dict SinksDict(const std::map<std::string, SinkSummary>& sinks) {
  py::dict out;
  for (const auto& [name, sink] : sinks) {
    py::dict entry;
    entry["pieces"] = sink.pieces;
    entry["checksum"] = ChecksumValue(sink.checksum);
    entry["in_order"] = sink.in_order;
    out[py::str(name)] = entry;
  }
  return out;
}

Plan PlanFrom(const py::handle& plan_like) {
  if (py::isinstance<Plan>(plan_like)) return plan_like.cast<Plan>();
  // An actorflow.Job (python/actorflow/job.py): its text, compiled.
  if (py::hasattr(plan_like, "_job_text")) {
    return CompileJobText(plan_like.attr("_job_text")().cast<std::string>());
  }
  if (py::isinstance<py::str>(plan_like)) {
    return LoadPlanLike(plan_like.cast<std::string>());
  }
  if (py::hasattr(plan_like, "__fspath__")) {
    return LoadPlanLike(py::module_::import("os")
                            .attr("fspath")(plan_like)
                            .cast<std::string>());
  }
  Throw(absl::InvalidArgumentError(
      absl::StrCat("a plan is an actorflow.Plan, a path or a plan's text, not ",
                   py::str(py::type::of(plan_like)).cast<std::string>())));
}

void RegisterPlans(py::module_& m) {
  py::class_<Plan>(m, "Plan", "A task plan (the protobuf Plan).")
      .def("__str__", &PlanText)
      .def("text", &PlanText, "The plan in protobuf text format.")
      .def(
          "serialize",
          [](const Plan& plan) { return py::bytes(plan.SerializeAsString()); },
          "The plan in protobuf binary format.")
      .def_property_readonly(
          "tasks",
          [](const Plan& plan) {
            std::vector<std::string> names;
            for (const TaskProto& task : plan.task())
              names.push_back(task.name());
            return names;
          },
          "The tasks' names, in plan order.")
      .def(
          "save",
          [](const Plan& plan, const std::string& path) {
            ThrowIfError(SavePlan(plan, path));
          },
          py::arg("path"), "Writes the plan: text for .pbtxt, binary for .pb.")
      .def("__repr__", [](const Plan& plan) {
        return absl::StrCat("<actorflow.Plan of ", plan.task_size(), " tasks>");
      });
  m.def(
      "load_plan", [](const py::handle& p) { return PlanFrom(p); },
      py::arg("path_or_text"),
      "A Plan from a .pbtxt/.pb path or from a plan's text; a job (file, "
      "text or actorflow.Job) is compiled. ValueError naming the file, "
      "line and column when it does not parse, or the operator when a job "
      "does not compile.");
  m.def(
      "compile",
      [](const py::handle& job) {
        if (py::isinstance<Plan>(job)) {
          Throw(absl::InvalidArgumentError(
              "compile: this is a Plan already; compile takes a Job"));
        }
        Plan plan = PlanFrom(job);
        return plan;
      },
      py::arg("job"),
      "The Plan compiled from a job: an actorflow.Job, a job file's path or "
      "a job's text (proto/job.proto). ValueError naming the operator and "
      "input when it does not compile.");
  m.def(
      "validate", [](const py::handle& p) { return ValidatePlan(PlanFrom(p)); },
      py::arg("plan"),
      "Every problem that would keep the plan from running, one message "
      "each (empty: valid).");
  m.def(
      "dot",
      [](const py::handle& p) {
        auto compiled = CompilePlan(PlanFrom(p));
        return PlanToDot(*ValueOrThrow(std::move(compiled)));
      },
      py::arg("plan"), "The plan as a Graphviz digraph.");
  m.def("run", &RunPlanOnce, py::arg("plan"), py::arg("pieces") = py::none(),
        py::arg("timeout") = py::none(),
        "Runs the plan once (pieces: each source's count; None: the plan's "
        "total_piece_num) and returns the `actorflow run` summary as a dict. "
        "timeout (seconds) stops a longer run with TimeoutError.");
}

}  // namespace actorflow::internal::python
