#include "python/src/py_session.h"

#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "actorflow/session.h"
#include "python/src/py_arrays.h"
#include "python/src/py_errors.h"
#include "python/src/py_kernel.h"
#include "python/src/py_plan.h"

namespace actorflow::internal::python {

namespace {

// The op_type a task bound to a Python function gets.
std::string PythonOpType(const std::string& task) {
  return absl::StrCat("python.", task);
}

py::dict RunStatsDict(const RunStats& stats) {
  py::dict out;
  out["first_piece"] = stats.first_piece;
  out["pieces"] = stats.pieces;
  out["acts"] = stats.acts;
  out["wall_ms"] = stats.wall_ms;
  if (!stats.tasks.empty()) {
    py::dict tasks;
    for (const auto& [name, task] : stats.tasks) {
      py::dict entry;
      entry["acts"] = task.acts;
      entry["busy_ms"] = static_cast<double>(task.busy_ns) / 1e6;
      entry["blocked_on_inputs_ms"] =
          static_cast<double>(task.input_wait_ns) / 1e6;
      entry["blocked_on_outputs_ms"] =
          static_cast<double>(task.output_wait_ns) / 1e6;
      entry["register_bytes"] = task.register_bytes;
      tasks[py::str(name)] = entry;
    }
    out["tasks"] = tasks;
  }
  return out;
}

absl::Duration SecondsOption(const py::object& value, const char* name) {
  if (value.is_none()) return absl::ZeroDuration();
  const double seconds = value.cast<double>();
  if (!(seconds > 0)) {
    Throw(absl::InvalidArgumentError(absl::StrCat(
        "Session: ", name, " must be > 0 seconds, got ", seconds)));
  }
  return absl::Seconds(seconds);
}

}  // namespace

py::dict CheckpointDict(const CheckpointInfo& info) {
  py::dict out;
  out["path"] = info.path;
  out["piece"] = info.piece;
  out["bytes"] = info.bytes;
  out["pause_ms"] = info.pause_ms;
  out["write_ms"] = info.write_ms;
  py::dict user;
  for (const StateEntry& entry : info.user.entries()) {
    Tensor tensor(entry.data_type, entry.shape);
    if (!entry.bytes.empty()) {
      std::memcpy(tensor.mutable_raw_data(), entry.bytes.data(),
                  entry.bytes.size());
    }
    user[py::str(entry.name)] = ArrayFromTensor(std::move(tensor));
  }
  out["user"] = user;
  return out;
}

// actorflow.Session. Every call that may wait releases the GIL (a Python
// kernel on a runtime thread needs it) and answers Ctrl-C.
class PySession {
 public:
  PySession(const py::handle& plan_like, const py::dict& kernels, bool trace,
            bool stats, const py::object& timeout, const py::object& stall,
            const py::object& restore_from) {
    Plan plan = PlanFrom(plan_like);
    SessionOptions options;
    options.trace = trace;
    options.stats = stats;
    options.timeout = SecondsOption(timeout, "timeout");
    options.stall = SecondsOption(stall, "stall");
    if (!restore_from.is_none()) {
      options.restore_from =
          py::str(py::module_::import("os").attr("fspath")(restore_from))
              .cast<std::string>();
    }
    BindKernels(kernels, &plan, &options.kernels);
    py::gil_scoped_release nogil;  // kernels' Init may call into Python
    auto created = Session::Create(std::move(plan), std::move(options));
    if (!created.ok()) {
      py::gil_scoped_acquire gil;
      Throw(created.status());
    }
    session_ = *std::move(created);
  }

  ~PySession() { Destroy(); }

  py::dict Run(const py::object& pieces) {
    Session* s = Usable();
    const int64_t n = pieces.is_none() ? -1 : pieces.cast<int64_t>();
    auto stats = CallBlocking([s, n] { return s->Run(n); }, Interrupter());
    last_ = ValueOrThrow(std::move(stats));
    return RunStatsDict(last_);
  }
  void Start(const py::object& pieces) {
    Session* s = Usable();
    const int64_t n = pieces.is_none() ? -1 : pieces.cast<int64_t>();
    py::gil_scoped_release nogil;
    absl::Status started = s->Start(n);
    py::gil_scoped_acquire gil;
    ThrowIfError(started);
  }
  py::dict Wait() {
    Session* s = Usable();
    auto stats = CallBlocking([s] { return s->Wait(); }, Interrupter());
    last_ = ValueOrThrow(std::move(stats));
    return RunStatsDict(last_);
  }
  void Feed(const std::string& name, const py::array& array) {
    Session* s = Usable();
    const std::string what = absl::StrCat("feed '", name, "'");
    Tensor tensor = TensorFromArray(array, what.c_str());
    absl::Status fed = CallBlocking(
        [s, &name, &tensor] { return s->Feed(name, tensor); }, Interrupter());
    ThrowIfError(fed);
  }
  void CloseFeed(const std::string& name) {
    Session* s = Usable();
    py::gil_scoped_release nogil;
    absl::Status closed = s->CloseFeed(name);
    py::gil_scoped_acquire gil;
    ThrowIfError(closed);
  }
  void CloseFeeds() {
    Session* s = Usable();
    py::gil_scoped_release nogil;
    absl::Status closed = s->CloseFeeds();
    py::gil_scoped_acquire gil;
    ThrowIfError(closed);
  }
  FetchedTensor FetchBorrowed(const std::string& name) {
    Session* s = Usable();
    auto fetched = CallBlocking([s, &name] { return s->FetchBorrowed(name); },
                                Interrupter());
    return ValueOrThrow(std::move(fetched));
  }
  py::dict Sinks() { return SinksDict(Usable()->Sinks()); }
  // Checkpoints (actorflow/session.h); `user`: name -> array, saved beside.
  py::dict Checkpoint(const std::string& dir, int keep_last,
                      const py::object& timeout, const py::dict& user) {
    Session* s = Usable();
    CheckpointOptions options;
    options.keep_last = keep_last;
    if (!timeout.is_none()) options.timeout = SecondsOption(timeout, "timeout");
    for (const auto& [key, value] : user) {
      const std::string name = py::str(key).cast<std::string>();
      const std::string what = absl::StrCat("checkpoint: user['", name, "']");
      Tensor tensor = TensorFromArray(py::array::ensure(value), what.c_str());
      options.user.Add(
          name, tensor.data_type(),
          std::vector<int64_t>(tensor.shape().begin(), tensor.shape().end()),
          tensor.raw_data());
    }
    auto info = CallBlocking(
        [s, &dir, &options] { return s->Checkpoint(dir, options); },
        Interrupter());
    return CheckpointDict(ValueOrThrow(std::move(info)));
  }
  py::dict Restore(const std::string& dir) {
    Session* s = Usable();
    py::gil_scoped_release nogil;
    absl::StatusOr<CheckpointInfo> info = s->Restore(dir);
    py::gil_scoped_acquire gil;
    return CheckpointDict(ValueOrThrow(std::move(info)));
  }
  py::object Restored() {
    const std::optional<CheckpointInfo>& info = Usable()->restored();
    if (!info) return py::none();
    return CheckpointDict(*info);
  }
  py::dict Stats() {
    Session* s = Usable();
    py::dict out = RunStatsDict(last_);
    RunProgress progress = s->Progress();
    py::dict now;
    now["running"] = progress.running;
    now["pieces_done"] = progress.pieces_done;
    now["pieces_total"] = progress.pieces_total;
    now["acts"] = progress.acts;
    now["elapsed_ms"] = progress.elapsed_ms;
    out["progress"] = now;
    return out;
  }
  bool running() { return Usable()->running(); }
  bool closed() const { return closed_; }

  // Refuses further calls; frees everything now unless a borrowed view
  // still points into the registers (then when the last one goes).
  void Close() {
    closed_ = true;
    if (borrowed_ == 0) Destroy();
  }
  void Borrow() { ++borrowed_; }
  void GiveBack() {
    if (--borrowed_ == 0 && closed_) Destroy();
  }
  Session* session() { return session_.get(); }

 private:
  Session* Usable() {
    if (closed_ || session_ == nullptr) {
      Throw(absl::FailedPreconditionError("the session is closed"));
    }
    return session_.get();
  }
  std::function<void()> Interrupter() {
    Session* s = session_.get();
    return [s] { s->Abort(absl::CancelledError("interrupted (Ctrl-C)")); };
  }
  // Cancels a run in progress and joins every thread, without the GIL
  // (a Python kernel may be waiting for it).
  void Destroy() {
    if (session_ == nullptr) return;
    std::unique_ptr<Session> doomed = std::move(session_);
    py::gil_scoped_release nogil;
    doomed.reset();
  }
  void BindKernels(const py::dict& kernels, Plan* plan,
                   KernelBindings* bindings) {
    for (const auto& [key, value] : kernels) {
      const std::string task_name = py::str(key).cast<std::string>();
      if (!PyCallable_Check(value.ptr())) {
        Throw(absl::InvalidArgumentError(absl::StrCat(
            "kernels['", task_name, "']: not callable (",
            py::str(py::type::of(value)).cast<std::string>(), ")")));
      }
      TaskProto* task = nullptr;
      std::vector<std::string> names;
      for (TaskProto& candidate : *plan->mutable_task()) {
        if (candidate.name() == task_name) task = &candidate;
        names.push_back(candidate.name());
      }
      if (task == nullptr) {
        Throw(absl::InvalidArgumentError(
            absl::StrCat("kernels: the plan has no task '", task_name,
                         "' (its tasks: ", absl::StrJoin(names, ", "), ")")));
      }
      const std::string op_type = PythonOpType(task_name);
      task->mutable_kernel()->set_op_type(op_type);
      auto fn = std::make_shared<GilSafeObject>(
          py::reinterpret_borrow<py::object>(value));
      const bool fills = TakesOut(fn->get());
      bindings->BindFunction(op_type, [fn, fills](KernelContext* ctx) {
        return CallPythonKernel(*fn, fills, ctx);
      });
    }
  }

  std::unique_ptr<Session> session_;
  RunStats last_;
  bool closed_ = false;
  int borrowed_ = 0;
};

// A fetched piece lent by the plan (Session.fetch(name, copy=False)): a
// read-only numpy view (`array`), DLPack for torch.from_dlpack, valid until
// release() (or until this object is collected).
class PyFetched {
 public:
  PyFetched(py::object owner, FetchedTensor tensor)
      : owner_(std::move(owner)), tensor_(std::move(tensor)) {
    owner_.cast<PySession&>().Borrow();
  }
  ~PyFetched() { Release(); }

  void Release() {
    if (released_) return;
    released_ = true;
    tensor_.Release();
    owner_.cast<PySession&>().GiveBack();
  }
  const ConstTensorView& view() {
    if (released_) {
      Throw(absl::FailedPreconditionError("the fetched piece was released"));
    }
    view_ = tensor_.view();
    return view_;
  }
  int64_t piece_id() const { return tensor_.piece_id(); }
  bool released() const { return released_; }

 private:
  py::object owner_;
  FetchedTensor tensor_;
  ConstTensorView view_;
  bool released_ = false;
};

void RegisterSessions(py::module_& m) {
  py::class_<PySession>(m, "Session")
      .def(py::init<const py::handle&, const py::dict&, bool, bool,
                    const py::object&, const py::object&, const py::object&>(),
           py::arg("plan"), py::arg("kernels") = py::dict(),
           py::arg("trace") = false, py::arg("stats") = false,
           py::arg("timeout") = py::none(), py::arg("stall") = py::none(),
           py::arg("restore_from") = py::none())
      .def("checkpoint", &PySession::Checkpoint, py::arg("directory"),
           py::arg("keep_last") = 0, py::arg("timeout") = py::none(),
           py::arg("user") = py::dict())
      .def("restore", &PySession::Restore, py::arg("directory"))
      .def_property_readonly("restored", &PySession::Restored)
      .def("run", &PySession::Run, py::arg("pieces") = py::none())
      .def("start", &PySession::Start, py::arg("pieces") = py::none())
      .def("wait", &PySession::Wait)
      .def("feed", &PySession::Feed, py::arg("name"), py::arg("array"))
      .def("close_feed", &PySession::CloseFeed, py::arg("name"))
      .def("close_feeds", &PySession::CloseFeeds)
      .def(
          "fetch",
          [](py::object self, const std::string& name,
             bool copy) -> py::object {
            PySession& session = self.cast<PySession&>();
            FetchedTensor fetched = session.FetchBorrowed(name);
            if (!copy) {
              return py::cast(new PyFetched(self, std::move(fetched)),
                              py::return_value_policy::take_ownership);
            }
            ConstTensorView view = fetched.view();
            Tensor tensor(
                view.data_type(),
                std::vector<int64_t>(view.shape().begin(), view.shape().end()));
            if (view.byte_size() > 0) {
              std::memcpy(tensor.mutable_raw_data(), view.raw_data(),
                          view.byte_size());
            }
            fetched.Release();
            return ArrayFromTensor(std::move(tensor));
          },
          py::arg("name"), py::arg("copy") = true)
      .def("sinks", &PySession::Sinks)
      .def("stats", &PySession::Stats)
      .def_property_readonly("running", &PySession::running)
      .def_property_readonly("closed", &PySession::closed)
      .def("close", &PySession::Close)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PySession& self, py::args) { self.Close(); });

  py::class_<PyFetched>(m, "FetchedArray")
      .def_property_readonly("piece_id", &PyFetched::piece_id)
      .def_property_readonly("released", &PyFetched::released)
      .def_property_readonly(
          "array",
          [](py::object self) {
            return ViewOf(self.cast<PyFetched&>().view(), self,
                          /*writable=*/false);
          },
          "A read-only numpy view, valid until release().")
      .def(
          "__dlpack__",
          [](py::object self, py::object /*stream*/) {
            return ToDlpack(ViewOf(self.cast<PyFetched&>().view(), self,
                                   /*writable=*/false));
          },
          py::arg("stream") = py::none())
      .def("__dlpack_device__", [](PyFetched&) { return py::make_tuple(1, 0); })
      .def("release", &PyFetched::Release)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyFetched& self, py::args) { self.Release(); });
}

}  // namespace actorflow::internal::python
