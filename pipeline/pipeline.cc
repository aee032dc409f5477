#include "pipeline/pipeline.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/job_builder.h"
#include "compiler/job_compiler.h"
#include "pipeline/pipeline_held.h"
#include "pipeline/sample_ops.h"
#include "runtime/plan_builder.h"

namespace actorflow::pipeline {
namespace {

constexpr char kScheduleTask[] = "schedule";

// The attributes a pipeline sets on every per-sample task (the rest are the
// operator's own).
const std::set<std::string> kStageAttrs = {
    "input",    "output",   "worker",     "workers",     "seed",
    "op_index", "op_name",  "batch_size", "skip_errors", "deal",
    "ops",      "op_names", "op_indices", "fuse_decode"};

// The attributes each operator reads (docs/pipelines.md, "Operators"); null for
// an op this table does not know (Build reports unknown operators itself).
const std::vector<std::string>* KnownAttrs(const std::string& op) {
  static const auto* const known =
      new std::map<std::string, std::vector<std::string>>{
          {"file_reader",
           {"dir", "files", "labels", "file_list", "shard_id", "num_shards",
            "shuffle_window", "limit"}},
          {"idx_reader",
           {"images", "labels", "shard_id", "num_shards", "shuffle_window",
            "limit"}},
          {"external_source", {"dtype", "shape"}},
          {"decode", {"color", "max_pixels"}},
          {"decode_random_crop",
           {"color", "max_pixels", "size", "random", "resize_shorter",
            "resize_size"}},
          {"decode_resize", {"color", "max_pixels", "shorter", "size"}},
          {"resize", {"size", "shorter"}},
          {"crop", {"size", "random"}},
          {"flip", {"horizontal", "vertical"}},
          {"crop_mirror_normalize",
           {"crop", "crop_pos", "mirror", "mean", "std"}},
          {"cast", {"to"}},
          {"normalize", {"mean", "std", "axis"}},
          {"batch", {"max_shape"}},
      };
  auto it = known->find(op);
  return it == known->end() ? nullptr : &it->second;
}

bool IsReader(const std::string& op) {
  return op == "file_reader" || op == "idx_reader";
}
bool IsDense(const std::string& op) {
  return op == "cast" || op == "normalize";
}

}  // namespace

// ---- views ----

absl::Span<const int64_t> OutputView::sample_shape(int64_t i) const {
  const int64_t rank = shapes_.shape()[1];
  const auto* dims = static_cast<const int64_t*>(shapes_.raw_data());
  return absl::Span<const int64_t>(dims + i * rank, rank);
}

absl::StatusOr<OutputView> BatchView::output(absl::string_view name) const {
  std::vector<std::string> names;
  for (const OutputView& out : outputs) {
    if (out.name() == name) return out;
    names.push_back(out.name());
  }
  return absl::NotFoundError(absl::StrCat(
      "no output '", name, "'; outputs: ", absl::StrJoin(names, ", ")));
}

// ---- the pipeline ----

// An operator's output in the job the pipeline compiles. Named when an
// input reads it, not before: fusing renames operators. An output "out" is
// named by its operator alone, which no other operator's name can shadow
// (op "out" with output "out" beside the fetch op "out.out").
struct Pipeline::Ref {
  OpConf* op = nullptr;
  std::string output;
  std::string text() const {
    return output == "out" ? op->name() : absl::StrCat(op->name(), ".", output);
  }
};

// What Build knows of a data node.
struct Pipeline::Node {
  std::string kind;  // "source", "sample", "batched"
  SampleSpec spec;   // per sample (batched: without the batch dimension)
  bool on_device = false;
  // The outputs that carry it: one (source, batched) or one per worker.
  std::vector<Ref> regsts;
  std::vector<OpConf*> tasks;
  Ref shapes_regst;   // batched: its per-sample shapes
  std::string chain;  // sample: its tasks' name (fused operators)
};

Pipeline::Pipeline(PipelineOptions options) : options_(std::move(options)) {}

Pipeline::~Pipeline() {
  held_.clear();  // borrowed registers go back before the session ends
  ready_.clear();
  session_.reset();
}

Pipeline& Pipeline::Add(OperatorDef def) {
  if (def.name.empty()) {
    def.name = def.outputs.empty() ? def.op : def.outputs[0];
  }
  ops_.push_back(std::move(def));
  return *this;
}

Pipeline& Pipeline::SetOutputs(std::vector<std::string> names) {
  output_names_ = std::move(names);
  return *this;
}

const Plan& Pipeline::plan() const { return plan_; }

const RunTrace& Pipeline::trace() const {
  static const RunTrace kEmpty;
  return session_ ? session_->trace() : kEmpty;
}

absl::Status Pipeline::Build() {
  if (built_) return absl::FailedPreconditionError("Build: already built");
  absl::Status status = Compile();
  if (!status.ok()) return status;
  SessionOptions session_options;
  session_options.trace = options_.trace;
  session_options.channel.spin_ns = options_.spin_ns;
  session_options.probe = options_.probe;
  BindKernels(&session_options.kernels);
  auto session = Session::Create(plan_, std::move(session_options));
  if (!session.ok()) {
    return absl::Status(
        session.status().code(),
        absl::StrCat("pipeline plan: ", session.status().message()));
  }
  session_ = std::move(*session);
  built_ = true;
  if (!options_.restore_from.empty()) {
    absl::StatusOr<CheckpointInfo> restored = Restore(options_.restore_from);
    if (!restored.ok()) return Fail(restored.status());
  }
  return absl::OkStatus();
}

void Pipeline::BindKernels(KernelBindings* kernels) {
  SkipLog* log = &log_;
  kernels->Bind("pipeline.batch", [log] {
    return std::unique_ptr<Kernel>(new BatchKernel(log));
  });
  SampleDealers* dealers = dealers_.get();
  std::vector<std::string> stage_op_types = {"pipeline.chain"};
  for (const std::string& name : SampleOpNames()) {
    stage_op_types.push_back("pipeline." + name);
  }
  for (const std::string& op_type : stage_op_types) {
    kernels->Bind(op_type, [dealers] {
      return std::unique_ptr<Kernel>(new SampleStageKernel(dealers));
    });
  }
  std::atomic<int64_t>* counter = &chunks_read_;
  kernels->Bind("pipeline.file_reader", [counter] {
    auto reader = std::make_unique<FileReaderKernel>();
    reader->CountChunksInto(counter);
    return std::unique_ptr<Kernel>(std::move(reader));
  });
  kernels->Bind("pipeline.idx_reader", [counter] {
    auto reader = std::make_unique<IdxReaderKernel>();
    reader->CountChunksInto(counter);
    return std::unique_ptr<Kernel>(std::move(reader));
  });
}

absl::Status Pipeline::Compile() {
  std::vector<std::string> problems;
  const int workers = options_.num_threads;
  const int depth = options_.prefetch_depth;
  const int gpu_depth =
      options_.gpu_prefetch_depth > 0 ? options_.gpu_prefetch_depth : depth;
  if (options_.batch_size < 1) problems.push_back("batch_size: at least 1");
  if (workers < 1) problems.push_back("num_threads: at least 1");
  if (depth < 1) problems.push_back("prefetch_depth: at least 1");
  if (options_.gpu_prefetch_depth < 0) {
    problems.push_back("gpu_prefetch_depth: 0 (the CPU depth) or more");
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }
  depth_ = depth;
  dealers_ = std::make_unique<SampleDealers>(depth_);
  const int64_t n = options_.batch_size;
  const bool skip = options_.on_error == OnError::kSkipSample;

  // A job of one operator per task: worker w's stages on CPU device w; the
  // schedule, reader, batch and fetches on CPU device `workers`; batched
  // operators on GPU device 0. The compiler numbers tasks and registers,
  // copies what a GPU operator reads to it and what is fetched off it, and
  // gives each device its streams. Every register states its depth.
  JobBuilder job;
  const int io = workers;
  auto add_op = [&](const std::string& name, const std::string& op_type,
                    int cpu_device, bool gpu = false) {
    return job.Op(name, op_type)
        .Place(gpu ? GPU : CPU, {gpu ? 0 : cpu_device})
        .conf();
  };
  auto consume = [](OpConf* op, const std::string& key, const Ref& from) {
    op->add_input(absl::StrCat(key, "=", from.text()));
  };
  auto add_output = [](OpConf* op, const std::string& key, int num,
                       std::vector<BlobDescProto> blobs = {}) {
    op->add_output(key);
    (*op->mutable_register_num())[key] = num;
    for (BlobDescProto& blob : blobs) *op->add_blob() = std::move(blob);
    return Ref{op, key};
  };
  std::map<std::string, Node> nodes;
  std::set<std::string> task_names;
  auto where = [&](int i) {
    return absl::StrCat("operator '", ops_[i].name, "' (", ops_[i].op, ")");
  };
  auto unique_task = [&](int i, const std::string& name) {
    if (!task_names.insert(name).second) {
      problems.push_back(
          absl::StrCat(where(i), ": name '", name, "' is used twice"));
    }
    return name;
  };

  OpConf* schedule = add_op(kScheduleTask, "feed", io);
  task_names.insert(kScheduleTask);
  const Ref schedule_regst =
      add_output(schedule, "out", depth + 1,
                 {BlobProto(kChunkBlob, DT_INT64, {3}, false)});
  int sources = 0;
  bool has_reader = false;
  int batch_op = -1;

  // The batch task (and its copies to the device when mixed): explicit
  // (operator bi), or implied (bi < 0) by outputs that are still samples.
  auto write_batch = [&](const OperatorDef* batch_def, int bi) {
    auto bwhere = [&] {
      return bi >= 0 ? where(bi) : std::string("the batch of the outputs");
    };
    std::vector<int64_t> max_override;
    if (batch_def->attrs.count("max_shape")) {
      const auto& list = batch_def->attrs.at("max_shape").list().i();
      max_override.assign(list.begin(), list.end());
    }
    const bool mixed = batch_def->device == "mixed";
    OpConf* task = add_op(
        bi >= 0 ? unique_task(bi, batch_def->name) : std::string("batch"),
        "pipeline.batch", io);
    std::vector<int64_t> counts, ranks, shapes, input_index;
    std::vector<std::string> consumed;  // each register once
    std::vector<std::string> types;
    std::vector<Node> batched;
    for (size_t k = 0; k < batch_def->inputs.size(); ++k) {
      const std::string& name = batch_def->inputs[k];
      auto it = nodes.find(name);
      if (it == nodes.end() || it->second.kind == "batched") {
        problems.push_back(absl::StrCat(bwhere(), ": input '", name,
                                        it == nodes.end()
                                            ? "' is no operator's output"
                                            : "' is batched already"));
        continue;
      }
      Node& in = it->second;
      SampleSpec spec = in.spec;
      if (!spec.bounded() && max_override.size() == spec.max_shape.size()) {
        for (size_t d = 0; d < spec.max_shape.size(); ++d) {
          if (spec.max_shape[d] < 0) spec.max_shape[d] = max_override[d];
        }
      }
      if (!spec.bounded()) {
        problems.push_back(absl::StrCat(
            bwhere(), ": '", name, "' has samples of ",
            ShapeString(spec.max_shape),
            " (-1: not known before the data is read); resize to a 'size' "
            "or crop before batching, or give the batch operator attr "
            "max_shape"));
        continue;
      }
      for (const Ref& ref : in.regsts) {
        auto at = std::find(consumed.begin(), consumed.end(), ref.text());
        if (at == consumed.end()) {
          consume(task, "in", ref);
          at = consumed.insert(consumed.end(), ref.text());
        }
        input_index.push_back(at - consumed.begin());
      }
      counts.push_back(static_cast<int64_t>(in.regsts.size()));
      ranks.push_back(static_cast<int64_t>(spec.max_shape.size()));
      shapes.insert(shapes.end(), spec.max_shape.begin(), spec.max_shape.end());
      types.push_back(DataTypeName(spec.type));
      Node out{"batched", spec, false, {}, {task}};
      batched.push_back(out);
    }
    if (batched.size() != batch_def->inputs.size()) return;
    auto& attrs = *task->mutable_attr();
    attrs["outputs"] = StringListAttr(batch_def->inputs);
    attrs["inputs_per_output"] = IntListAttr(counts);
    attrs["input_index"] = IntListAttr(input_index);
    attrs["types"] = StringListAttr(types);
    attrs["ranks"] = IntListAttr(ranks);
    attrs["max_shapes"] = IntListAttr(shapes);
    attrs["batch_size"] = IntAttr(n);
    for (size_t k = 0; k < batched.size(); ++k) {
      const std::string& in_name = batch_def->inputs[k];
      Node& out = batched[k];
      out.regsts = {add_output(task, "out_" + in_name, depth)};
      out.shapes_regst = add_output(task, "shape_" + in_name, depth);
      // Made on the host; the compiler copies it up for the GPU operators
      // that read it (the copy holds gpu_prefetch_depth batches).
      out.on_device = mixed;
      // The implied batch keeps each node's name for its batched form.
      nodes.erase(batch_def->outputs[k]);
      nodes.emplace(batch_def->outputs[k], out);
    }
  };

  // How many operators and outputs read each node: a node read once, by a
  // per-sample operator, is fused away.
  std::map<std::string, int> consumers;
  for (const OperatorDef& def : ops_) {
    for (const std::string& in : def.inputs) ++consumers[in];
  }
  for (const std::string& out : output_names_) ++consumers[out];

  for (int i = 0; i < static_cast<int>(ops_.size()); ++i) {
    const OperatorDef& def = ops_[i];
    const std::string& op = def.op;
    if (def.device != "cpu" && def.device != "mixed" && def.device != "gpu") {
      problems.push_back(absl::StrCat(where(i), ": device '", def.device,
                                      "' (cpu, mixed or gpu)"));
      continue;
    }
    if (const std::vector<std::string>* known = KnownAttrs(op)) {
      for (const auto& [key, value] : def.attrs) {
        if (std::find(known->begin(), known->end(), key) == known->end()) {
          problems.push_back(absl::StrCat(
              where(i), ": unknown attr '", key, "' (", op, " takes: ",
              known->empty() ? "none" : absl::StrJoin(*known, ", "), ")"));
        }
      }
    }
    // Inputs must exist.
    std::vector<Node*> inputs;
    bool missing = false;
    for (const std::string& in : def.inputs) {
      auto it = nodes.find(in);
      if (it == nodes.end()) {
        problems.push_back(absl::StrCat(where(i), ": input '", in,
                                        "' is no earlier operator's output"));
        missing = true;
      } else {
        inputs.push_back(&it->second);
      }
    }
    if (missing) continue;
    auto declare = [&](const std::string& name, Node node) {
      if (!nodes.emplace(name, std::move(node)).second) {
        problems.push_back(absl::StrCat(where(i), ": output '", name,
                                        "' is already another's output"));
      }
    };
    auto expect_io = [&](size_t ins, size_t outs_min, size_t outs_max) {
      if (def.inputs.size() == ins && def.outputs.size() >= outs_min &&
          def.outputs.size() <= outs_max) {
        return true;
      }
      problems.push_back(absl::StrCat(
          where(i), ": takes ", ins, " input(s) and ", outs_min,
          outs_max > outs_min ? absl::StrCat(" or ", outs_max) : "",
          " output(s), got ", def.inputs.size(), " and ", def.outputs.size()));
      return false;
    };
    if (IsReader(op) || op == "external_source") {
      if (!expect_io(0, 1, op == "external_source" ? 1 : 2)) continue;
      if (def.device != "cpu") {
        problems.push_back(absl::StrCat(where(i), ": runs on cpu only"));
        continue;
      }
      // Several external sources advance in step (FeedInput); a reader
      // sets the epoch, so it comes alone.
      const bool reader = IsReader(op);
      if (sources > 0 && (reader || has_reader)) {
        problems.push_back(absl::StrCat(
            where(i), ": a pipeline has one reader, or external sources only"));
        continue;
      }
      ++sources;
      has_reader = has_reader || reader;
      OpConf* task = add_op(unique_task(i, def.name), "pipeline." + op, io);
      auto& attrs = *task->mutable_attr();
      for (const auto& [key, value] : def.attrs) attrs[key] = value;
      attrs["batch_size"] = IntAttr(n);
      attrs["outputs"] = StringListAttr(def.outputs);
      attrs["seed"] = IntAttr(static_cast<int64_t>(options_.seed));
      attrs["skip_errors"] = BoolAttr(skip);
      consume(task, "in", schedule_regst);
      std::vector<SampleSpec> specs;
      if (op == "external_source") {
        // A feed of whole batches, split into samples by the source task.
        auto type_name = def.attrs.count("dtype") ? def.attrs.at("dtype").s()
                                                  : std::string("uint8");
        auto type = ParseDataType(type_name);
        std::vector<int64_t> shape;
        if (def.attrs.count("shape")) {
          shape.assign(def.attrs.at("shape").list().i().begin(),
                       def.attrs.at("shape").list().i().end());
        }
        if (!type.ok() || def.attrs.count("shape") == 0) {
          problems.push_back(
              absl::StrCat(where(i),
                           ": attrs 'dtype' (a type name) and 'shape' (the "
                           "largest sample's shape) are required"));
          continue;
        }
        std::vector<int64_t> batch_shape = {n};
        batch_shape.insert(batch_shape.end(), shape.begin(), shape.end());
        OpConf* feed =
            add_op(unique_task(i, "input." + def.outputs[0]), "feed", io);
        // Room for depth fed ahead plus depth scheduled (see FeedInput).
        consume(
            task, "data",
            add_output(feed, "out", 2 * depth + 1,
                       {BlobProto(def.outputs[0], *type, batch_shape, true)}));
        // Each sample's own shape, one row per sample of the fed batch.
        OpConf* shape_feed = add_op(
            unique_task(i, "input." + def.outputs[0] + ".shape"), "feed", io);
        const int64_t rank = static_cast<int64_t>(shape.size());
        consume(task, "shapes",
                add_output(shape_feed, "out", 2 * depth + 1,
                           {BlobProto(def.outputs[0] + ".shape", DT_INT64,
                                      {n, rank}, true)}));
        externals_.push_back(ExternalSource{
            def.outputs[0], feed->name(), shape_feed->name(), {}});
        specs.push_back(SampleSpec{*type, shape});
      } else if (op == "file_reader") {
        specs = {SampleSpec{DT_UINT8, {-1}}, SampleSpec{DT_INT32, {}}};
      } else {
        auto images = def.attrs.count("images") ? def.attrs.at("images").s()
                                                : std::string();
        // A bad file is the reader's to report (below).
        auto dims = ReadIdxHeader(images);
        const bool known = dims.ok() && dims->size() == 3;
        if (!known) dims = std::vector<int64_t>{-1, -1, -1};
        specs = {SampleSpec{DT_UINT8, {(*dims)[1], (*dims)[2], 1}},
                 SampleSpec{DT_INT32, {}}};
      }
      const Ref regst = add_output(task, "out", depth);
      if (IsReader(op)) {
        // The reader's own checks (files, shards), and the epoch's size as
        // the reader will see it.
        std::unique_ptr<ReaderKernel> reader;
        if (op == "file_reader") {
          reader = std::make_unique<FileReaderKernel>();
        } else {
          reader = std::make_unique<IdxReaderKernel>();
        }
        TaskProto probe_task;
        probe_task.set_name(task->name());
        probe_task.mutable_kernel()->set_op_type(task->op_type());
        *probe_task.mutable_kernel()->mutable_attr() = task->attr();
        KernelInitContext ctx(
            probe_task,
            {KernelIo{
                "in", 1, {BlobDesc{kChunkBlob, DT_INT64, {3}, false}}, true}},
            {KernelIo{"out", 2, {}, false}});
        absl::Status init = reader->Init(ctx);
        // Its outputs still count as declared, so the operators after it
        // are checked too.
        if (!init.ok()) {
          problems.push_back(absl::StrCat(where(i), ": ", init.message()));
        }
        epoch_size_ = reader->epoch_size();
        chunks_per_epoch_ = (epoch_size_ + n - 1) / n;
      }
      for (size_t k = 0; k < def.outputs.size(); ++k) {
        Node node{"source", specs[k], false, {regst}, {task}};
        declare(def.outputs[k], node);
      }
      continue;
    }
    if (op == "batch") {
      if (def.inputs.empty() || def.inputs.size() != def.outputs.size()) {
        problems.push_back(absl::StrCat(
            where(i), ": takes as many outputs as inputs (at least one)"));
        continue;
      }
      if (batch_op >= 0) {
        problems.push_back(
            absl::StrCat(where(i),
                         ": a pipeline has one batch (it drops a failed "
                         "sample from every output at once)"));
        continue;
      }
      if (def.device == "gpu") {
        problems.push_back(absl::StrCat(
            where(i), ": batches on cpu, or mixed (then copied to the GPU)"));
        continue;
      }
      batch_op = i;
      write_batch(&def, i);
      continue;
    }
    const bool batched_input =
        inputs.size() == 1 && inputs[0]->kind == "batched";
    if (op == "normalize" && !batched_input) {
      problems.push_back(
          absl::StrCat(where(i),
                       ": 'normalize' works on batches (after the batch); on "
                       "samples, use crop_mirror_normalize"));
      continue;
    }
    if (IsDense(op) && batched_input) {
      if (!expect_io(1, 1, 1)) continue;
      Node& in = *inputs[0];
      const bool gpu = def.device == "gpu";
      if (gpu != in.on_device) {
        problems.push_back(absl::StrCat(
            where(i), ": runs on ", def.device, " but its input '",
            def.inputs[0], "' is in ", in.on_device ? "GPU" : "host",
            " memory (a mixed batch moves batches to the GPU)"));
        continue;
      }
      OpConf* task = add_op(unique_task(i, def.name), op, io, gpu);
      auto& attrs = *task->mutable_attr();
      for (const auto& [key, value] : def.attrs) attrs[key] = value;
      consume(task, "in", in.regsts[0]);
      Node node = in;
      node.regsts = {add_output(task, "out", gpu ? gpu_depth : depth)};
      node.tasks = {task};
      if (op == "normalize") node.spec.type = DT_FLOAT32;
      if (op == "cast") {
        auto to = ParseDataType(def.attrs.count("to") ? def.attrs.at("to").s()
                                                      : std::string());
        if (to.ok()) node.spec.type = *to;
      }
      declare(def.outputs[0], node);
      continue;
    }
    // A per-sample operator: one actor per worker.
    auto sample_op = MakeSampleOp(op);
    if (!sample_op.ok()) {
      problems.push_back(absl::StrCat(
          where(i),
          ": unknown operator; operators: file_reader, "
          "idx_reader, external_source, ",
          absl::StrJoin(SampleOpNames(), ", "), ", batch, normalize"));
      continue;
    }
    if (!expect_io(1, 1, 1)) continue;
    if (def.device != "cpu") {
      problems.push_back(absl::StrCat(
          where(i),
          ": per-sample operators run on cpu; after a mixed batch, "
          "cast and normalize run on the GPU"));
      continue;
    }
    Node& in = *inputs[0];
    if (in.kind == "batched") {
      problems.push_back(absl::StrCat(where(i), ": '", op,
                                      "' works on samples, but '",
                                      def.inputs[0], "' is already batched"));
      continue;
    }
    TaskProto probe_task;
    auto& probe_attrs = *probe_task.mutable_kernel()->mutable_attr();
    for (const auto& [key, value] : def.attrs) probe_attrs[key] = value;
    KernelInitContext probe(probe_task, {}, {});
    absl::Status init = (*sample_op)->Init(probe);
    auto spec = init.ok() ? (*sample_op)->Infer(in.spec)
                          : absl::StatusOr<SampleSpec>(init);
    if (!spec.ok()) {
      problems.push_back(absl::StrCat(where(i), ": ", spec.status().message()));
      continue;
    }
    // Fused into the chain that makes its input, when nothing else reads
    // that input: the sample then never leaves the worker's scratch.
    if (in.kind == "sample" && consumers[def.inputs[0]] == 1) {
      Node node{"sample", *spec, false, in.regsts, in.tasks};
      node.chain = in.chain + "+" + def.name;
      for (int w = 0; w < workers; ++w) {
        OpConf* task = in.tasks[w];
        auto& attrs = *task->mutable_attr();
        if (task->op_type() != "pipeline.chain") {
          // Turn the one-operator task into a chain of one.
          google::protobuf::Map<std::string, AttrValue> own;
          for (const auto& [key, value] : attrs) {
            if (!kStageAttrs.count(key)) own[absl::StrCat("0.", key)] = value;
          }
          for (const auto& [key, value] : own) attrs.erase(key.substr(2));
          attrs.insert(own.begin(), own.end());
          const std::string first_op =
              task->op_type().substr(std::strlen("pipeline."));
          attrs["ops"] = StringListAttr({first_op});
          attrs["op_names"] = StringListAttr({attrs["op_name"].s()});
          attrs["op_indices"] = IntListAttr({attrs["op_index"].i()});
          attrs.erase("op_name");
          attrs.erase("op_index");
          task->set_op_type("pipeline.chain");
        }
        const int j = attrs["ops"].list().s_size();
        attrs["ops"].mutable_list()->add_s(op);
        attrs["op_names"].mutable_list()->add_s(def.name);
        attrs["op_indices"].mutable_list()->add_i(i);
        for (const auto& [key, value] : def.attrs) {
          attrs[absl::StrCat(j, ".", key)] = value;
        }
        attrs["output"] = StringAttr(def.outputs[0]);
        task->set_name(unique_task(
            i, workers == 1 ? node.chain : absl::StrCat(node.chain, "@", w)));
      }
      declare(def.outputs[0], node);
      continue;
    }
    Node node{"sample", *spec, false, {}, {}};
    node.chain = def.name;
    for (int w = 0; w < workers; ++w) {
      const std::string name =
          workers == 1 ? def.name : absl::StrCat(def.name, "@", w);
      OpConf* task = add_op(unique_task(i, name), "pipeline." + op, w);
      auto& attrs = *task->mutable_attr();
      for (const auto& [key, value] : def.attrs) {
        if (kStageAttrs.count(key)) {
          problems.push_back(absl::StrCat(where(i), ": attr '", key,
                                          "' is the pipeline's to set"));
        }
        attrs[key] = value;
      }
      attrs["input"] = StringAttr(def.inputs[0]);
      attrs["output"] = StringAttr(def.outputs[0]);
      attrs["worker"] = IntAttr(w);
      attrs["workers"] = IntAttr(workers);
      attrs["seed"] = IntAttr(static_cast<int64_t>(options_.seed));
      attrs["op_index"] = IntAttr(i);
      attrs["op_name"] = StringAttr(def.name);
      attrs["batch_size"] = IntAttr(n);
      attrs["skip_errors"] = BoolAttr(skip);
      attrs["fuse_decode"] = BoolAttr(options_.fuse_decode);
      // The first stage after the reader claims samples as its workers get
      // free; later stages keep what their worker's first stage took.
      attrs["deal"] = StringAttr(in.kind == "source" ? "dynamic" : "all");
      consume(task, "in", in.kind == "source" ? in.regsts[0] : in.regsts[w]);
      node.regsts.push_back(add_output(task, "out", depth));
      node.tasks.push_back(task);
    }
    declare(def.outputs[0], node);
  }
  if (sources == 0) {
    problems.push_back(
        "the pipeline has no reader (file_reader, idx_reader) or "
        "external_source");
  }
  if (output_names_.empty()) {
    problems.push_back("no outputs: call SetOutputs with the nodes to batch");
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }

  if (batch_op < 0) {
    OperatorDef implied;
    implied.op = "batch";
    implied.name = "batch";
    for (const std::string& name : output_names_) {
      auto it = nodes.find(name);
      if (it != nodes.end() && it->second.kind != "batched") {
        implied.inputs.push_back(name);
        implied.outputs.push_back(name);
      }
    }
    if (!implied.inputs.empty()) write_batch(&implied, -1);
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }

  // Fetches, with a copy to the host for outputs on the device.
  for (const std::string& name : output_names_) {
    auto it = nodes.find(name);
    if (it == nodes.end()) {
      problems.push_back(
          absl::StrCat("SetOutputs: '", name, "' is no operator's output"));
      continue;
    }
    Node& node = it->second;
    if (node.kind != "batched") {
      // Only with an explicit batch operator: otherwise the implied one
      // takes every output still unbatched.
      problems.push_back(absl::StrCat(
          "SetOutputs: '", name,
          "' is not batched: with a batch operator, every output must come "
          "out of it (the one batch drops a failed sample from all outputs)"));
      continue;
    }
    // Off the GPU through a d2h the compiler inserts.
    consume(add_op(absl::StrCat("out.", name), "fetch", io), "in",
            node.regsts[0]);
    consume(add_op(absl::StrCat("out.", name, ".shape"), "fetch", io), "in",
            node.shapes_regst);
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }
  JobCompileOptions compile;
  KernelBindings kernels;
  BindKernels(&kernels);
  compile.bindings = &kernels;
  compile.probe = options_.probe;
  absl::StatusOr<CompiledJob> compiled = CompileJob(job.job(), compile);
  if (!compiled.ok()) {
    return absl::Status(
        compiled.status().code(),
        absl::StrCat("pipeline plan: ", compiled.status().message()));
  }
  plan_ = std::move(compiled->plan);
  // The copies the compiler inserted: onto the GPU, gpu_prefetch_depth
  // batches; off it, prefetch_depth.
  for (TaskProto& task : *plan_.mutable_task()) {
    const std::string& op_type = task.kernel().op_type();
    if (op_type != "h2d" && op_type != "d2h") continue;
    for (auto& [key, desc] : *task.mutable_produced_regst_desc()) {
      desc.set_register_num(op_type == "h2d" ? gpu_depth : depth);
    }
  }

  if (!externals_.empty()) epoch_size_ = -1;
  return absl::OkStatus();
}

// ---- running ----

absl::Status Pipeline::Fail(absl::Status status) {
  if (error_.ok()) error_ = std::move(status);
  return error_;
}

absl::Status Pipeline::Usable() const {
  if (!built_) {
    return absl::FailedPreconditionError("the pipeline is not built (Build)");
  }
  return error_;
}

bool Pipeline::MoreToIssue() const {
  if (!externals_.empty()) {
    // A chunk takes one fed batch from every external source.
    for (const ExternalSource& source : externals_) {
      if (source.fed.empty()) return false;
    }
    return true;
  }
  if (next_chunk_ < chunks_per_epoch_) return true;
  // Samples held over for lack of a full batch need one more (final)
  // chunk, once everything issued has come back and gone out.
  return in_flight_ == 0 && ready_.empty() &&
         epoch_size_ - delivered_ - log_.CountInEpoch(epoch_) > 0;
}

absl::Status Pipeline::Pump() {
  // Batches already made (ready_) count against the prefetch.
  const int64_t ready = static_cast<int64_t>(ready_.size());
  while (in_flight_ + ready < depth_ && in_flight_ + ready < requested_ &&
         MoreToIssue()) {
    const int64_t chunk = next_chunk_;
    const bool final = !externals_.empty() || chunk >= chunks_per_epoch_ - 1;
    const int64_t words[] = {epoch_, chunk, final ? 1 : 0};
    auto tensor = Tensor::FromValues<int64_t>({3}, words);
    // Blocking cannot hang: the schedule has depth_ + 1 registers, and only
    // a chunk that is not yet read (at most in_flight_ < depth_ of them)
    // holds one for longer than the trip back from the reader, which needs
    // nothing from the caller. (A TryFeed here could find every register
    // still on that trip and leave the chunk unscheduled until the caller's
    // next call, so Run() alone would not keep the prefetch going.)
    absl::Status fed = session_->Feed(kScheduleTask, *tensor);
    if (!fed.ok()) return Fail(fed);
    ++next_chunk_;
    ++in_flight_;
    for (ExternalSource& source : externals_) source.fed.pop_front();
  }
  return absl::OkStatus();
}

absl::Status Pipeline::Run() {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  ++requested_;
  return Pump();
}

absl::Status Pipeline::FeedInput(absl::string_view name, const Tensor& batch,
                                 const Tensor* shapes) {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  ExternalSource* source = nullptr;
  std::vector<std::string> names;
  for (ExternalSource& candidate : externals_) {
    if (candidate.name == name) source = &candidate;
    names.push_back(absl::StrCat("'", candidate.name, "'"));
  }
  if (source == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "FeedInput: no external source '", name, "'",
        names.empty() ? ""
        : names.size() == 1
            ? absl::StrCat(" (there is ", names[0], ")")
            : absl::StrCat(" (there are ", absl::StrJoin(names, ", "), ")")));
  }
  // At most depth_ fed ahead of Run and depth_ scheduled: the feed has
  // 2 * depth_ + 1 registers, so this Feed finds one free (or freed as the
  // source reads the scheduled ones) and never waits on the caller.
  if (static_cast<int64_t>(source->fed.size()) >= depth_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("FeedInput '", name, "': ", depth_,
                     " batches are fed and not yet scheduled; Run() first"));
  }
  if (batch.shape().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FeedInput '", name, "': a batch has a first dimension (samples)"));
  }
  const int64_t n = batch.shape()[0];
  const int64_t rank = static_cast<int64_t>(batch.shape().size()) - 1;
  Tensor own_shapes(DT_INT64, {n, rank});
  if (shapes == nullptr) {
    auto rows = *own_shapes.mutable_data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < rank; ++k)
        rows[i * rank + k] = batch.shape()[k + 1];
    }
    shapes = &own_shapes;
  }
  ok = CheckSampleShapes(name, batch, *shapes);
  if (!ok.ok()) return ok;
  // The batch this one joins: every source's j-th fed batch makes chunk j.
  const size_t j = source->fed.size();
  for (const ExternalSource& other : externals_) {
    if (other.fed.size() > j && other.fed[j] != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FeedInput '", name, "': ", n, " samples, but '", other.name,
          "' was fed ", other.fed[j], " for the same batch"));
    }
  }
  absl::Status fed = session_->Feed(source->feed, batch);
  if (absl::IsInvalidArgument(fed)) return fed;  // the batch does not fit
  if (!fed.ok()) return Fail(fed);
  // Checked above: only the session's failure can refuse it now.
  fed = session_->Feed(source->shape_feed, *shapes);
  if (!fed.ok()) return Fail(fed);
  source->fed.push_back(n);
  return absl::OkStatus();
}

absl::Status Pipeline::CheckSampleShapes(absl::string_view name,
                                         const Tensor& batch,
                                         const Tensor& shapes) {
  const int64_t n = batch.shape()[0];
  const int64_t rank = static_cast<int64_t>(batch.shape().size()) - 1;
  const auto where = [&] { return absl::StrCat("FeedInput '", name, "': "); };
  if (shapes.data_type() != DT_INT64 || shapes.shape().size() != 2 ||
      shapes.shape()[0] != n || shapes.shape()[1] != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        where(), "the sample shapes must be int64 [", n, ", ", rank,
        "] (one row per sample), got ", DataTypeName(shapes.data_type()), " ",
        ShapeString(shapes.shape())));
  }
  auto rows = *shapes.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t dim = rows[i * rank + k];
      if (dim < 0 || dim > batch.shape()[k + 1]) {
        return absl::InvalidArgumentError(absl::StrCat(
            where(), "sample ", i, " claims dimension ", k, " = ", dim,
            ", outside the batch's box [0, ", batch.shape()[k + 1], "]"));
      }
    }
  }
  return absl::OkStatus();
}

void Pipeline::Abort(absl::Status status) {
  if (session_ != nullptr) session_->Abort(std::move(status));
}

absl::StatusOr<bool> Pipeline::FetchOne(Held* held) {
  for (const std::string& name : output_names_) {
    auto data = session_->FetchBorrowed(absl::StrCat("out.", name));
    if (!data.ok()) return Fail(data.status());
    auto shapes = session_->FetchBorrowed(absl::StrCat("out.", name, ".shape"));
    if (!shapes.ok()) return Fail(shapes.status());
    held->data.push_back(std::move(*data));
    held->shapes.push_back(std::move(*shapes));
  }
  --in_flight_;
  return held->data[0].view().shape()[0] > 0;
}

absl::StatusOr<BatchView> Pipeline::ShareOutputs() {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  if (static_cast<int>(held_.size()) >= depth_) {
    return absl::FailedPreconditionError(
        absl::StrCat("ShareOutputs: all ", depth_,
                     " prefetched batches are held; ReleaseOutputs first"));
  }
  if (requested_ == 0) {
    return absl::FailedPreconditionError(
        "no batch is scheduled: call Run() first");
  }
  while (true) {
    ok = Pump();
    if (!ok.ok()) return ok;
    if (in_flight_ == 0 && ready_.empty()) {
      for (const ExternalSource& source : externals_) {
        if (source.fed.empty()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "no input: FeedInput a batch for '", source.name, "' first"));
        }
      }
      requested_ = 0;
      const int64_t skipped = log_.CountInEpoch(epoch_);
      return absl::OutOfRangeError(absl::StrCat(
          "end of epoch ", epoch_, ": ", batches_, " batches, ", delivered_,
          " samples", skipped ? absl::StrCat(" (", skipped, " skipped)") : "",
          "; Reset() starts the next epoch"));
    }
    std::unique_ptr<Held> held;
    if (!ready_.empty()) {
      held = std::move(ready_.front());
      ready_.pop_front();
    } else {
      held = std::make_unique<Held>();
      auto full = FetchOne(held.get());
      if (!full.ok()) return full.status();
      if (!*full) continue;  // every sample held over for the next batch
    }
    --requested_;
    ok = Pump();  // keep the prefetch full while the caller works
    if (!ok.ok()) return ok;
    held->epoch = epoch_;
    held->index = batches_++;
    BatchView view;
    view.epoch = held->epoch;
    view.index = held->index;
    for (size_t k = 0; k < output_names_.size(); ++k) {
      OutputView out;
      out.name_ = output_names_[k];
      out.data_ = held->data_view(k);
      out.shapes_ = held->shapes_view(k);
      view.outputs.push_back(std::move(out));
    }
    delivered_ += view.outputs[0].num_samples();
    held_.push_back(std::move(held));
    return view;
  }
}

absl::Status Pipeline::ReleaseOutputs() {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  if (held_.empty()) {
    return absl::FailedPreconditionError("ReleaseOutputs: no batch is held");
  }
  held_.pop_front();
  return absl::OkStatus();
}

absl::StatusOr<BatchView> Pipeline::Outputs() {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  held_.clear();
  return ShareOutputs();
}

absl::Status Pipeline::Drain() {
  held_.clear();
  ready_.clear();
  while (in_flight_ > 0) {
    Held discard;
    auto fetched = FetchOne(&discard);
    if (!fetched.ok()) return fetched.status();
  }
  return absl::OkStatus();
}

absl::Status Pipeline::Finish() {
  absl::Status ok = Usable();
  if (ok.ok()) ok = Drain();
  if (!ok.ok()) return ok;
  if (session_->running()) {
    ok = session_->CloseFeeds();
    if (ok.ok()) ok = session_->Wait().status();
    if (!ok.ok()) return Fail(ok);
  }
  error_ = absl::FailedPreconditionError("the pipeline has finished");
  return absl::OkStatus();
}

absl::Status Pipeline::Reset() {
  absl::Status ok = Usable();
  if (ok.ok()) ok = Drain();
  if (!ok.ok()) return ok;
  ++epoch_;
  next_chunk_ = 0;
  requested_ = 0;
  delivered_ = 0;
  batches_ = 0;
  return absl::OkStatus();
}

}  // namespace actorflow::pipeline
