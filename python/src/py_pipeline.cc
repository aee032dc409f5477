#include "python/src/py_pipeline.h"

#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/pipeline.h"
#include "pipeline/caffe_lmdb.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"
#include "python/src/py_arrays.h"
#include "python/src/py_errors.h"
#include "python/src/py_session.h"

namespace actorflow::internal::python {

namespace {

enum class Kind { kBool, kInt, kFloat, kStr, kOther };

Kind KindOf(const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return Kind::kBool;
  if (py::isinstance<py::str>(value)) return Kind::kStr;
  if (PyIndex_Check(value.ptr())) return Kind::kInt;  // numpy ints too
  if (PyFloat_Check(value.ptr()) ||
      (py::hasattr(value, "__float__") && !py::hasattr(value, "__len__"))) {
    return Kind::kFloat;
  }
  return Kind::kOther;
}

// A Python value as a plan attribute: bool, int, float, str, or a list or
// tuple of ints, floats (ints among floats count as floats) or strs.
AttrValue ToAttr(const std::string& op, const std::string& key,
                 const py::handle& value) {
  auto bad = [&]() {
    Throw(absl::InvalidArgumentError(absl::StrCat(
        "operator '", op, "': argument '", key,
        "' = ", py::repr(value).cast<std::string>(),
        ": wants a bool, int, float, str, or a list of ints, floats or "
        "strs")));
  };
  AttrValue attr;
  switch (KindOf(value)) {
    case Kind::kBool:
      attr.set_b(value.cast<bool>());
      return attr;
    case Kind::kInt:
      attr.set_i(value.cast<int64_t>());
      return attr;
    case Kind::kFloat:
      attr.set_f(value.cast<double>());
      return attr;
    case Kind::kStr:
      attr.set_s(value.cast<std::string>());
      return attr;
    case Kind::kOther:
      break;
  }
  if (!py::isinstance<py::list>(value) && !py::isinstance<py::tuple>(value)) {
    bad();
  }
  int ints = 0, floats = 0, strs = 0;
  for (const auto& item : value) {
    switch (KindOf(item)) {
      case Kind::kInt:
        ++ints;
        break;
      case Kind::kFloat:
        ++floats;
        break;
      case Kind::kStr:
        ++strs;
        break;
      default:
        bad();
    }
  }
  if (strs > 0 && ints + floats > 0) bad();
  AttrList* list = attr.mutable_list();
  for (const auto& item : value) {
    if (strs > 0) {
      list->add_s(item.cast<std::string>());
    } else if (floats > 0) {
      list->add_f(item.cast<double>());
    } else {
      list->add_i(item.cast<int64_t>());
    }
  }
  return attr;
}

}  // namespace

class PyPipeline {
 public:
  PyPipeline(int64_t batch_size, int num_threads, int prefetch_depth,
             uint64_t seed, const std::string& on_error, bool fuse_decode,
             bool autotune, int autotune_cpus, int64_t autotune_memory_bytes) {
    PipelineOptions options;
    options.batch_size = batch_size;
    options.num_threads = num_threads;
    options.prefetch_depth = prefetch_depth;
    options.seed = seed;
    if (on_error == "fail") {
      options.on_error = OnError::kFail;
    } else if (on_error == "skip_sample") {
      options.on_error = OnError::kSkipSample;
    } else {
      Throw(absl::InvalidArgumentError(absl::StrCat(
          "Pipeline: on_error is \"fail\" or \"skip_sample\", not \"", on_error,
          "\"")));
    }
    options.fuse_decode = fuse_decode;
    options.autotune = autotune;
    options.autotune_cpus = autotune_cpus;
    options.autotune_memory_bytes = autotune_memory_bytes;
    pipe_ = std::make_unique<Pipeline>(options);
  }
  ~PyPipeline() { Close(); }

  void Add(const std::string& op, const std::string& name,
           std::vector<std::string> inputs, std::vector<std::string> outputs,
           const std::string& device, const py::dict& attrs) {
    OperatorDef def;
    def.op = op;
    def.name = name;
    def.inputs = std::move(inputs);
    def.outputs = std::move(outputs);
    def.device = device;
    for (const auto& [key, value] : attrs) {
      const std::string k = py::str(key).cast<std::string>();
      def.attrs[k] = ToAttr(name.empty() ? op : name, k, value);
    }
    Get()->Add(std::move(def));
  }
  void SetOutputs(std::vector<std::string> names) {
    Get()->SetOutputs(std::move(names));
  }
  void Build() {
    Pipeline* pipe = Get();
    py::gil_scoped_release nogil;
    absl::Status built = pipe->Build();
    py::gil_scoped_acquire gil;
    ThrowIfError(built);
  }
  Plan plan() { return Get()->plan(); }
  int64_t epoch_size() { return Get()->epoch_size(); }
  int64_t dataset_size() { return Get()->dataset_size(); }
  int64_t epoch() { return Get()->epoch(); }
  int64_t batches() { return Get()->batches(); }
  void Schedule() { ThrowIfError(Get()->Run()); }

  // The next batch as [(name, data, shapes)], held until Release (share) or
  // the next call (outputs); None at the end of the epoch.
  py::object Take(py::object self, bool share) {
    Pipeline* pipe = Get();
    auto batch = CallBlocking(
        [pipe, share] {
          return share ? pipe->ShareOutputs() : pipe->Outputs();
        },
        [pipe] { pipe->Abort(absl::CancelledError("interrupted (Ctrl-C)")); });
    if (absl::IsOutOfRange(batch.status())) return py::none();
    ThrowIfError(batch.status());
    py::list outputs;
    for (const OutputView& output : batch->outputs) {
      outputs.append(py::make_tuple(output.name(),
                                    ViewOf(output.data(), self, false),
                                    ViewOf(output.shapes(), self, false)));
    }
    return outputs;
  }
  // The next batch as [(name, data, shapes)], the caller's to keep (the
  // arrays own their memory); None at the end of the epoch.
  py::object TakeOwned() {
    Pipeline* pipe = Get();
    auto batch = CallBlocking(
        [pipe] { return pipe->TakeOutputs(); },
        [pipe] { pipe->Abort(absl::CancelledError("interrupted (Ctrl-C)")); });
    if (absl::IsOutOfRange(batch.status())) return py::none();
    ThrowIfError(batch.status());
    py::list outputs;
    for (TakenOutput& output : batch->outputs) {
      outputs.append(py::make_tuple(output.name,
                                    ArrayOwning(std::move(output.data)),
                                    ArrayFromTensor(std::move(output.shapes))));
    }
    return outputs;
  }
  void Release() { ThrowIfError(Get()->ReleaseOutputs()); }
  void FeedInput(const std::string& name, const py::array& batch,
                 const py::object& shapes) {
    const std::string what = absl::StrCat("feed_input '", name, "'");
    Tensor data = TensorFromArray(batch, what.c_str());
    std::optional<Tensor> own;
    if (!shapes.is_none()) {
      own = TensorFromArray(py::array::ensure(shapes), what.c_str());
    }
    ThrowIfError(Get()->FeedInput(name, data, own ? &*own : nullptr));
  }
  void Reset() {
    Pipeline* pipe = Get();
    py::gil_scoped_release nogil;
    absl::Status reset = pipe->Reset();
    py::gil_scoped_acquire gil;
    ThrowIfError(reset);
  }
  // Checkpoints (pipeline.h): the path and piece of the one written.
  py::dict Checkpoint(const std::string& dir, int keep_last) {
    Pipeline* pipe = Get();
    CheckpointOptions options;
    options.keep_last = keep_last;
    py::gil_scoped_release nogil;
    absl::StatusOr<CheckpointInfo> info = pipe->Checkpoint(dir, options);
    py::gil_scoped_acquire gil;
    return CheckpointDict(ValueOrThrow(std::move(info)));
  }
  // One directory, or (an elastic pipeline) every old rank's.
  py::dict Restore(const std::vector<std::string>& dirs) {
    Pipeline* pipe = Get();
    py::gil_scoped_release nogil;
    absl::StatusOr<CheckpointInfo> info = pipe->Restore(dirs);
    py::gil_scoped_acquire gil;
    return CheckpointDict(ValueOrThrow(std::move(info)));
  }
  // {task: {"acts", "busy_ms", "starved_ms", "back_pressured_ms",
  // "register_bytes"}}.
  py::dict Stats() {
    auto stats = ValueOrThrow(Get()->Stats());
    py::dict out;
    for (const auto& [task, s] : stats) {
      py::dict entry;
      entry["acts"] = s.acts;
      entry["busy_ms"] = static_cast<double>(s.busy_ns) / 1e6;
      entry["starved_ms"] = static_cast<double>(s.input_wait_ns) / 1e6;
      entry["back_pressured_ms"] = static_cast<double>(s.output_wait_ns) / 1e6;
      entry["register_bytes"] = s.register_bytes;
      out[py::str(task)] = entry;
    }
    return out;
  }
  // Pipeline::Stalls as a dict: "window_ms", "batches", "batches_per_s",
  // "samples_per_s", "caller_wait", "stages" ({stage: {"threads", "acts",
  // "samples_per_s", "busy", "starved", "back_pressured", "register_bytes"}})
  // and "verdict".
  py::dict Stalls() {
    PipelineStalls report = ValueOrThrow(Get()->Stalls());
    py::dict stages;
    for (const auto& [name, stage] : report.stages) {
      py::dict entry;
      entry["threads"] = stage.threads;
      entry["acts"] = stage.acts;
      entry["samples_per_s"] = stage.samples_per_s;
      entry["busy"] = stage.busy;
      entry["starved"] = stage.starved;
      entry["back_pressured"] = stage.back_pressured;
      entry["register_bytes"] = stage.register_bytes;
      stages[py::str(name)] = entry;
    }
    py::dict out;
    out["window_ms"] = report.window_ms;
    out["batches"] = report.batches;
    out["batches_per_s"] = report.batches_per_s;
    out["samples_per_s"] = report.samples_per_s;
    out["caller_wait"] = report.caller_wait;
    out["stages"] = stages;
    out["verdict"] = report.verdict;
    return out;
  }
  // {"enabled", "threads", "depth", "settled", "batches_to_settle",
  //  "trials": [{"threads", "depth", "images_per_s", "memory_bytes"}]}.
  py::dict Autotune() {
    AutotuneReport report = Get()->Autotune();
    py::list trials;
    for (const AutotuneTrial& t : report.trials) {
      py::dict trial;
      trial["threads"] = t.threads;
      trial["depth"] = t.depth;
      trial["images_per_s"] = t.images_per_s;
      trial["memory_bytes"] = t.memory_bytes;
      trials.append(trial);
    }
    py::dict out;
    out["enabled"] = report.enabled;
    out["threads"] = report.threads;
    out["depth"] = report.depth;
    out["settled"] = report.settled;
    out["batches_to_settle"] = report.batches_to_settle;
    out["trials"] = trials;
    return out;
  }
  int64_t SkippedCount() {
    return static_cast<int64_t>(Get()->skipped().size());
  }
  py::list Skipped() {
    py::list out;
    for (const auto& sample : Get()->skipped()) {
      py::dict entry;
      entry["epoch"] = sample.epoch;
      entry["position"] = sample.position;
      entry["file"] = sample.name;
      entry["error"] = sample.error;
      out.append(entry);
    }
    return out;
  }
  // Cancels what runs and joins every thread, without the GIL.
  void Close() {
    if (pipe_ == nullptr) return;
    std::unique_ptr<Pipeline> doomed = std::move(pipe_);
    py::gil_scoped_release nogil;
    doomed.reset();
  }

 private:
  Pipeline* Get() {
    if (pipe_ == nullptr) {
      Throw(absl::FailedPreconditionError("the pipeline is closed"));
    }
    return pipe_.get();
  }
  std::unique_ptr<Pipeline> pipe_;
};

// (height, width) from an encoded image's first bytes; ValueError when
// they hold no JPEG or PNG header.
py::tuple ImageSize(py::bytes encoded) {
  std::string_view data = encoded;
  auto header = pipeline::ReadImageHeader(absl::MakeConstSpan(
      reinterpret_cast<const uint8_t*>(data.data()), data.size()));
  ThrowIfError(header.status());
  return py::make_tuple(header->height, header->width);
}

// (height, width) an image of in_h x in_w resizes to under the resize
// operator's rule (pipeline::RuleSize): for the batch's bound.
py::tuple ResizeSize(int64_t in_h, int64_t in_w, double height, double width,
                     const std::string& mode, double max_height,
                     double max_width) {
  auto parsed = pipeline::ParseResizeMode(mode);
  ThrowIfError(parsed.status());
  int64_t h = 0, w = 0;
  pipeline::RuleSize(in_h, in_w,
                     {height, width, *parsed, max_height, max_width}, &h, &w);
  return py::make_tuple(h, w);
}

// (height, width) of every record's image in a Caffe LMDB, in key order:
// for the batch's bound of decoded images.
std::vector<std::pair<int64_t, int64_t>> CaffeImageSizes(
    const std::string& path) {
  auto db = pipeline::CaffeLmdb::Open(path);
  ThrowIfError(db.status());
  std::vector<std::pair<int64_t, int64_t>> sizes;
  for (int64_t i = 0; i < (*db)->size(); ++i) {
    auto size = (*db)->ImageSize(i);
    if (!size.ok()) {
      ThrowIfError(absl::Status(
          size.status().code(),
          absl::StrCat("LMDB '", path, "' ", size.status().message())));
    }
    sizes.push_back(*size);
  }
  return sizes;
}

void RegisterPipelines(py::module_& m) {
  m.def("_caffe_image_sizes", &CaffeImageSizes, py::arg("path"));
  m.def("_image_size", &ImageSize, py::arg("encoded"));
  m.def("_resize_size", &ResizeSize, py::arg("in_h"), py::arg("in_w"),
        py::arg("height"), py::arg("width"), py::arg("mode"),
        py::arg("max_height"), py::arg("max_width"));
  py::class_<PyPipeline>(m, "_Pipeline")
      .def(py::init<int64_t, int, int, uint64_t, const std::string&, bool, bool,
                    int, int64_t>(),
           py::arg("batch_size"), py::arg("num_threads"),
           py::arg("prefetch_depth"), py::arg("seed"), py::arg("on_error"),
           py::arg("fuse_decode"), py::arg("autotune") = false,
           py::arg("autotune_cpus") = 0, py::arg("autotune_memory_bytes") = 0)
      .def("autotune", &PyPipeline::Autotune)
      .def("add", &PyPipeline::Add)
      .def("set_outputs", &PyPipeline::SetOutputs)
      .def("build", &PyPipeline::Build)
      .def_property_readonly("plan", &PyPipeline::plan)
      .def("epoch_size", &PyPipeline::epoch_size)
      .def("stats", &PyPipeline::Stats)
      .def("stalls", &PyPipeline::Stalls)
      .def("skipped_count", &PyPipeline::SkippedCount)
      .def("dataset_size", &PyPipeline::dataset_size)
      .def("epoch", &PyPipeline::epoch)
      .def("batches", &PyPipeline::batches)
      .def("schedule", &PyPipeline::Schedule)
      .def("take",
           [](py::object self, bool share) {
             return self.cast<PyPipeline&>().Take(self, share);
           })
      .def("take_owned", &PyPipeline::TakeOwned)
      .def("release", &PyPipeline::Release)
      .def("feed_input", &PyPipeline::FeedInput, py::arg("name"),
           py::arg("batch"), py::arg("shapes") = py::none())
      .def("reset", &PyPipeline::Reset)
      .def("checkpoint", &PyPipeline::Checkpoint, py::arg("directory"),
           py::arg("keep_last") = 0)
      .def("restore", &PyPipeline::Restore, py::arg("directories"))
      .def("skipped", &PyPipeline::Skipped)
      .def("close", &PyPipeline::Close);
}

}  // namespace actorflow::internal::python
