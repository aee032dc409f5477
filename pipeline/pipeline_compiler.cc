// Pipeline::Compile: a pipeline's operators written as a job (one operator
// per worker and stage), then compiled into the plan the pipeline runs.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/act_context.h"
#include "actorflow/job_builder.h"
#include "actorflow/job_compiler.h"
#include "actorflow/pipeline.h"
#include "actorflow/session.h"
#include "pipeline/concatenate.h"
#include "pipeline/multi_sample_op.h"
#include "pipeline/sample_function.h"
#include "pipeline/sample_ops.h"
#include "pipeline/stage_kernels.h"
#include "plan/plan_builder.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::BlobProto;
using ::actorflow::internal::BoolAttr;
using ::actorflow::internal::IntAttr;
using ::actorflow::internal::IntListAttr;
using ::actorflow::internal::MakeInitContext;
using ::actorflow::internal::StringAttr;
using ::actorflow::internal::StringListAttr;
namespace pipeline = ::actorflow::internal::pipeline;

// The pipeline's kernels and operators (internal: pipeline/).
using pipeline::CaffeReaderKernel;
using pipeline::FileReaderKernel;
using pipeline::IdxReaderKernel;
using pipeline::kChunkBlob;
using pipeline::MakeSampleOp;
using pipeline::ParseArithOp;
using pipeline::ReaderKernel;
using pipeline::ReadIdxHeader;
using pipeline::RecordIoReaderKernel;
using pipeline::SampleDealers;
using pipeline::SampleOp;
using pipeline::SampleOpNames;
using pipeline::SampleSpec;
using pipeline::TfRecordReaderKernel;
using pipeline::WebDatasetReaderKernel;
namespace {

// The attributes a pipeline sets on every per-sample task (the rest are the
// operator's own).
const std::set<std::string> kStageAttrs = {
    "input",    "output",   "worker",     "workers",     "seed",
    "op_index", "op_name",  "batch_size", "skip_errors", "deal",
    "ops",      "op_names", "op_indices", "fuse_decode", "finish_in_batch"};

// The attributes each operator reads (docs/pipelines.md, "Operators"); null for
// an op this table does not know (Build reports unknown operators itself).
const std::vector<std::string>* KnownAttrs(const std::string& op) {
  static const auto* const known = [] {
    auto* table = new std::map<std::string, std::vector<std::string>>{
        {"file_reader",
         {"dir", "files", "labels", "file_list", "shard_id", "num_shards",
          "stick_to_shard", "shuffle_window", "shuffle_list", "limit",
          "elastic"}},
        {"webdataset_reader",
         {"paths", "ext", "missing_component_behavior", "dtypes", "shard_id",
          "num_shards", "stick_to_shard", "shuffle_window", "shuffle_list",
          "limit", "elastic", "read_ahead_bytes", "http_attempts"}},
        {"idx_reader",
         {"images", "labels", "shard_id", "num_shards", "stick_to_shard",
          "shuffle_window", "shuffle_list", "limit", "elastic"}},
        {"caffe_reader",
         {"path", "image_available", "label_available", "shard_id",
          "num_shards", "stick_to_shard", "shuffle_window", "shuffle_list",
          "limit", "elastic"}},
        {"tfrecord_reader",
         {"paths", "features", "kinds", "shapes", "defaults", "shard_id",
          "num_shards", "stick_to_shard", "shuffle_window", "shuffle_list",
          "limit", "elastic"}},
        {"recordio_reader",
         {"paths", "shard_id", "num_shards", "stick_to_shard", "shuffle_window",
          "shuffle_list", "limit", "elastic"}},
        {"external_source", {"dtype", "shape"}},
        {"decode", {"color", "max_pixels", "adjust_orientation"}},
        {"decode_random_crop",
         {"color", "max_pixels", "adjust_orientation", "size", "random", "pos",
          "resize_shorter", "resize_size", "antialias"}},
        {"decode_resize",
         {"color", "max_pixels", "adjust_orientation", "shorter", "size",
          "antialias"}},
        {"decode_random_resized_crop",
         {"color", "max_pixels", "adjust_orientation", "size", "random_area",
          "random_aspect_ratio", "num_attempts", "antialias"}},
        {"resize",
         {"size", "shorter", "longer", "resize_x", "resize_y", "mode",
          "max_size", "antialias", "interp",
          // A side drawn per sample (pipeline/sample_args.h).
          "shorter_uniform", "shorter_normal", "shorter_stream",
          "longer_uniform", "longer_normal", "longer_stream",
          "resize_x_uniform", "resize_x_normal", "resize_x_stream",
          "resize_y_uniform", "resize_y_normal", "resize_y_stream"}},
        {"crop", {"size", "random", "pos", "out_of_bounds", "fill_values"}},
        {"random_resized_crop",
         {"size", "random_area", "random_aspect_ratio", "num_attempts",
          "antialias"}},
        {"flip",
         {"horizontal", "vertical", "horizontal_stream", "vertical_stream"}},
        {"crop_mirror_normalize",
         {"crop", "crop_pos", "mirror", "mirror_stream", "mean", "std",
          "pad_output", "fill_values"}},
        {"cast", {"to", "round"}},
        {"sleep", {"ms"}},
        {"normalize", {"mean", "std", "axis"}},
        {"batch", {"max_shape"}},
        {"arith", {"op"}},
        {"cat", {"axis"}},
        {"stack", {"axis"}},
        {"function", {"function"}},
    };
    for (auto& [name, attrs] : pipeline::AugmentOpAttrs()) {
      (*table)[name] = attrs;
    }
    for (auto& [name, attrs] : pipeline::MultiSampleOpAttrs()) {
      (*table)[name] = attrs;
    }
    return table;
  }();
  auto it = known->find(op);
  return it == known->end() ? nullptr : &it->second;
}

bool IsReader(const std::string& op) {
  return op == "file_reader" || op == "idx_reader" ||
         op == "webdataset_reader" || op == "caffe_reader" ||
         op == "tfrecord_reader" || op == "recordio_reader";
}
// More would not fit one register's blobs sensibly; DALI's functions
// return a few.
constexpr size_t kMaxFunctionOutputs = 64;

bool IsCombine(absl::string_view op) {
  return op == "arith" || op == "cat" || op == "stack" || op == "function" ||
         pipeline::MakeMultiSampleOp(std::string(op)) != nullptr;
}
bool IsCombineTask(const OpConf& task) {
  const absl::string_view op_type = task.op_type();
  return absl::StartsWith(op_type, "pipeline.") &&
         IsCombine(op_type.substr(sizeof("pipeline.") - 1));
}
bool IsDense(const std::string& op) {
  return op == "cast" || op == "normalize";
}

}  // namespace

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
  std::vector<Ref> registers;
  std::vector<OpConf*> tasks;
  Ref shapes_register;  // batched: its per-sample shapes
  std::string chain;    // sample: its tasks' name (fused operators)
  // source: finds the largest sample's element count (-1: unknown) for a
  // batch that has no other box for the node; asked only then, since it
  // may take a pass over the data (a file reader's bytes: a stat of every
  // file).
  std::function<int64_t()> largest;
};

// One compilation. The job places worker w's stages on CPU device w; the
// schedule, reader, batch and fetches on CPU device `workers` (io_); batched
// operators on GPU device 0. The job compiler numbers tasks and registers,
// copies what a GPU operator reads to it and what is fetched off it, and
// gives each device its streams. Every register states its depth.
//
// Each step adds what it can and notes every problem it finds, naming the
// operator; Run stops at the first step that found any, so that one Build
// reports all the problems of one kind at once.
class Pipeline::Compiler {
 public:
  explicit Compiler(Pipeline* pipeline)
      : p_(*pipeline),
        options_(pipeline->options_),
        workers_(options_.num_threads),
        depth_(options_.prefetch_depth),
        gpu_depth_(options_.gpu_prefetch_depth > 0 ? options_.gpu_prefetch_depth
                                                   : options_.prefetch_depth),
        n_(options_.batch_size),
        skip_(options_.on_error == OnError::kSkipSample),
        io_(options_.num_threads) {}

  // The options' own problems, before anything is built.
  static absl::Status CheckOptions(const PipelineOptions& options);

  absl::Status Run() {
    AddSchedule();
    CountConsumers();
    for (int i = 0; i < static_cast<int>(p_.ops_.size()); ++i) AddOperator(i);
    CheckSourcesAndOutputs();
    if (!problems_.empty()) return Problems();
    if (batch_op_ < 0) AddImpliedBatch();
    if (!problems_.empty()) return Problems();
    AddFetches();
    if (!problems_.empty()) return Problems();
    return WritePlan();
  }

 private:
  // ---- writing the job ----
  OpConf* AddOp(const std::string& name, const std::string& op_type,
                int cpu_device, bool gpu = false) {
    return job_.Op(name, op_type)
        .Place(gpu ? DeviceKind::kGpu : DeviceKind::kCpu,
               {gpu ? 0 : cpu_device})
        .conf();
  }
  static void Consume(OpConf* op, const std::string& key, const Ref& from) {
    op->add_input(absl::StrCat(key, "=", from.text()));
  }
  static Ref AddOutput(OpConf* op, const std::string& key, int num,
                       std::vector<BlobDescProto> blobs = {}) {
    op->add_output(key);
    (*op->mutable_register_num())[key] = num;
    for (BlobDescProto& blob : blobs) *op->add_blob() = std::move(blob);
    return Ref{op, key};
  }

  // ---- problems ----
  std::string Where(int i) const {
    return absl::StrCat("operator '", p_.ops_[i].name, "' (", p_.ops_[i].op,
                        ")");
  }
  void Problem(int i, absl::string_view what) {
    problems_.push_back(absl::StrCat(Where(i), ": ", what));
  }
  absl::Status Problems() const {
    return absl::InvalidArgumentError(absl::StrJoin(problems_, "\n"));
  }
  // `name`, noted as a problem of operator i if a task has it already.
  std::string UniqueTask(int i, const std::string& name) {
    if (!task_names_.insert(name).second) {
      Problem(i, absl::StrCat("name '", name, "' is used twice"));
    }
    return name;
  }
  void Declare(int i, const std::string& name, Node node) {
    if (!nodes_.emplace(name, std::move(node)).second) {
      Problem(i,
              absl::StrCat("output '", name, "' is already another's output"));
    }
  }
  bool ExpectIo(int i, size_t ins, size_t outs_min, size_t outs_max) {
    const OperatorDef& def = p_.ops_[i];
    if (def.inputs.size() == ins && def.outputs.size() >= outs_min &&
        def.outputs.size() <= outs_max) {
      return true;
    }
    Problem(i, absl::StrCat(
                   "takes ", ins, " input(s) and ", outs_min,
                   outs_max > outs_min ? absl::StrCat(" or ", outs_max) : "",
                   " output(s), got ", def.inputs.size(), " and ",
                   def.outputs.size()));
    return false;
  }

  // ---- the steps ----
  // The schedule: the feed of chunks (first sample, count, epoch) that
  // Pump issues and every source reads.
  void AddSchedule() {
    OpConf* schedule = AddOp(kScheduleTask, "feed", io_);
    task_names_.insert(kScheduleTask);
    schedule_register_ =
        AddOutput(schedule, "out", depth_ + 1,
                  {BlobProto(kChunkBlob, DT_INT64, {3}, false)});
  }
  // How many operators and outputs read each node: a node read once, by a
  // per-sample operator, is fused away. And whether any operator is arith
  // (static_deal_), which every stage's dealing depends on.
  void CountConsumers() {
    for (const OperatorDef& def : p_.ops_) {
      for (const std::string& in : def.inputs) ++consumers_[in];
      static_deal_ = static_deal_ || IsCombine(def.op);
    }
    for (const std::string& out : p_.output_names_) ++consumers_[out];
  }
  // Operator i: its device, attributes and inputs checked, then added by
  // its kind.
  void AddOperator(int i);
  void AddSource(int i);
  // The reader's own checks (files, shards) at Build, and the epoch's size
  // as the reader will see it.
  // Inits the reader as its task will be (problems noted); null when it
  // fails.
  std::unique_ptr<ReaderKernel> ProbeReader(int i, const OpConf& task);
  void AddBatchOperator(int i);
  // The batch task (and its copies to the device when mixed): explicit
  // (operator bi), or implied (bi < 0) by outputs that are still samples.
  void AddBatch(const OperatorDef& batch_def, int bi);
  // Output k of the batch `task`: the last operator of the chain that makes
  // node `name`, when it finishes in a batch and nothing else reads the
  // node, moved to the batch (its chain then only checks it). Returns the
  // operator's name ("" where it stays).
  std::string FinishInBatch(const std::string& name, const Node& in, size_t k,
                            OpConf* task, std::vector<std::string>* names,
                            std::vector<int64_t>* indices);
  void AddImpliedBatch();
  // cast and normalize on whole batches, on the CPU or the GPU.
  void AddDenseOperator(int i, const Node& in);
  // A per-sample operator: fused into its input's chain, or one task per
  // worker.
  // `sample_op`: the operator's function, made to check its attributes and
  // infer its output.
  void AddSampleOperator(int i, const Node& in, SampleOp& sample_op);
  void FuseIntoChain(int i, const Node& in, const SampleSpec& spec);
  void AddStages(int i, const Node& in, const SampleSpec& spec);
  // arith, cat and stack: several per-sample nodes into one, with the
  // output's type and bound.
  void AddCombine(int i, const std::vector<const Node*>& inputs);
  absl::StatusOr<SampleSpec> ArithSpec(int i, const Node& a, const Node& b);
  absl::StatusOr<std::vector<SampleSpec>> FunctionSpecs(
      int i, const std::vector<const Node*>& inputs);
  absl::StatusOr<SampleSpec> JoinSpec(int i,
                                      const std::vector<const Node*>& inputs);
  absl::StatusOr<std::vector<SampleSpec>> MultiSampleSpecs(
      int i, pipeline::MultiSampleOp& op,
      const std::vector<const Node*>& inputs);
  void CheckSourcesAndOutputs();
  // A fetch per output and per output's shapes, copied off the GPU by the
  // job compiler where the output is on it.
  void AddFetches();
  // Compiles the job into the pipeline's plan.
  absl::Status WritePlan();

  Pipeline& p_;
  const PipelineOptions& options_;
  const int workers_;
  const int depth_;
  const int gpu_depth_;
  const int64_t n_;  // batch size
  const bool skip_;  // on_error = skip_sample
  const int io_;     // the CPU device of the schedule, readers and batch
  JobBuilder job_;
  std::vector<std::string> problems_;
  std::map<std::string, Node> nodes_;
  std::set<std::string> task_names_;
  std::map<std::string, int> consumers_;
  Ref schedule_register_;
  int sources_ = 0;
  bool has_reader_ = false;
  // With arith, a worker takes positions p % workers == worker from every
  // source (not first come): any two per-sample nodes then hold the same
  // samples on each worker, which arith pairs.
  bool static_deal_ = false;
  int batch_op_ = -1;
};

absl::Status Pipeline::Compiler::CheckOptions(const PipelineOptions& options) {
  std::vector<std::string> problems;
  if (options.batch_size < 1) problems.push_back("batch_size: at least 1");
  if (options.num_threads < 1) problems.push_back("num_threads: at least 1");
  if (options.prefetch_depth < 1) {
    problems.push_back("prefetch_depth: at least 1");
  }
  if (options.gpu_prefetch_depth < 0) {
    problems.push_back("gpu_prefetch_depth: 0 (the CPU depth) or more");
  }
  if (problems.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
}

void Pipeline::Compiler::AddOperator(int i) {
  const OperatorDef& def = p_.ops_[i];
  const std::string& op = def.op;
  if (def.device != "cpu" && def.device != "mixed" && def.device != "gpu") {
    Problem(i, absl::StrCat("device '", def.device, "' (cpu, mixed or gpu)"));
    return;
  }
  if (const std::vector<std::string>* known = KnownAttrs(op)) {
    for (const auto& [key, value] : def.attrs) {
      if (std::find(known->begin(), known->end(), key) == known->end()) {
        Problem(
            i, absl::StrCat(
                   "unknown attr '", key, "' (", op, " takes: ",
                   known->empty() ? "none" : absl::StrJoin(*known, ", "), ")"));
      }
    }
  }
  // Inputs must exist.
  std::vector<const Node*> inputs;
  bool missing = false;
  for (const std::string& in : def.inputs) {
    auto it = nodes_.find(in);
    if (it == nodes_.end()) {
      Problem(i,
              absl::StrCat("input '", in, "' is no earlier operator's output"));
      missing = true;
    } else {
      inputs.push_back(&it->second);
    }
  }
  if (missing) return;
  if (IsReader(op) || op == "external_source") {
    AddSource(i);
    return;
  }
  if (op == "batch") {
    AddBatchOperator(i);
    return;
  }
  if (IsCombine(op)) {
    const size_t ins = std::max<size_t>(1, inputs.size());
    if (op == "arith" ? ExpectIo(i, 2, 1, 1)
        : op == "function" || pipeline::MakeMultiSampleOp(op) != nullptr
            ? ExpectIo(i, ins, 1, kMaxFunctionOutputs)
            : ExpectIo(i, ins, 1, 1)) {
      AddCombine(i, inputs);
    }
    return;
  }
  const bool batched_input = inputs.size() == 1 && inputs[0]->kind == "batched";
  if (op == "normalize" && !batched_input) {
    Problem(i,
            "'normalize' works on batches (after the batch); on samples, use "
            "crop_mirror_normalize");
    return;
  }
  if (IsDense(op) && batched_input) {
    if (!ExpectIo(i, 1, 1, 1)) return;
    AddDenseOperator(i, *inputs[0]);
    return;
  }
  // Checked before the inputs' count, so that a misspelt operator is
  // named as such.
  absl::StatusOr<std::unique_ptr<SampleOp>> sample_op = MakeSampleOp(op);
  if (!sample_op.ok()) {
    Problem(i, absl::StrCat("unknown operator; operators: file_reader, "
                            "webdataset_reader, caffe_reader, "
                            "tfrecord_reader, recordio_reader, idx_reader, "
                            "external_source, ",
                            absl::StrJoin(SampleOpNames(), ", "),
                            ", batch, normalize"));
    return;
  }
  if (!ExpectIo(i, 1, 1, 1)) return;
  AddSampleOperator(i, *inputs[0], **sample_op);
}

void Pipeline::Compiler::AddSource(int i) {
  const OperatorDef& def = p_.ops_[i];
  const std::string& op = def.op;
  const int most_outputs =
      op == "external_source"                                ? 1
      : op == "webdataset_reader" || op == "tfrecord_reader" ? 64
                                                             : 2;
  if (!ExpectIo(i, 0, 1, most_outputs)) return;
  if (def.device != "cpu") {
    Problem(i, "runs on cpu only");
    return;
  }
  // Several external sources advance in step (FeedInput); a reader sets
  // the epoch, so it comes alone.
  const bool reader = IsReader(op);
  if (sources_ > 0 && (reader || has_reader_)) {
    Problem(i, "a pipeline has one reader, or external sources only");
    return;
  }
  ++sources_;
  has_reader_ = has_reader_ || reader;
  OpConf* task = AddOp(UniqueTask(i, def.name), "pipeline." + op, io_);
  auto& attrs = *task->mutable_attr();
  for (const auto& [key, value] : def.attrs) attrs[key] = value;
  attrs["batch_size"] = IntAttr(n_);
  attrs["outputs"] = StringListAttr(def.outputs);
  attrs["seed"] = IntAttr(static_cast<int64_t>(options_.seed));
  attrs["skip_errors"] = BoolAttr(skip_);
  Consume(task, "in", schedule_register_);
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
      Problem(i,
              "attrs 'dtype' (a type name) and 'shape' (the largest sample's "
              "shape) are required");
      return;
    }
    std::vector<int64_t> batch_shape = {n_};
    batch_shape.insert(batch_shape.end(), shape.begin(), shape.end());
    OpConf* feed = AddOp(UniqueTask(i, "input." + def.outputs[0]), "feed", io_);
    // Room for depth fed ahead plus depth scheduled (see FeedInput).
    Consume(task, "data",
            AddOutput(feed, "out", 2 * depth_ + 1,
                      {BlobProto(def.outputs[0], *type, batch_shape, true)}));
    // Each sample's own shape, one row per sample of the fed batch.
    OpConf* shape_feed =
        AddOp(UniqueTask(i, "input." + def.outputs[0] + ".shape"), "feed", io_);
    const int64_t rank = static_cast<int64_t>(shape.size());
    Consume(task, "shapes",
            AddOutput(shape_feed, "out", 2 * depth_ + 1,
                      {BlobProto(def.outputs[0] + ".shape", DT_INT64,
                                 {n_, rank}, true)}));
    p_.externals_.push_back(
        ExternalSource{def.outputs[0], feed->name(), shape_feed->name(), {}});
    specs.push_back(SampleSpec{*type, shape});
  } else if (op == "file_reader") {
    specs = {SampleSpec{DT_UINT8, {-1}}, SampleSpec{DT_INT32, {}}};
  } else if (op == "caffe_reader") {
    // The image's bound and rank come from the records (below).
    auto flag = [&](const char* name) {
      return def.attrs.count(name) == 0 || def.attrs.at(name).b();
    };
    if (flag("image_available")) specs.push_back(SampleSpec{DT_UINT8, {-1}});
    if (flag("label_available")) specs.push_back(SampleSpec{DT_INT32, {}});
    specs.resize(def.outputs.size(), SampleSpec{DT_UINT8, {-1}});
  } else if (op == "tfrecord_reader") {
    // Types and shapes from the features' declarations (ProbeReader checks
    // them and bounds the bytes and "var" ones by the largest record).
    specs.assign(def.outputs.size(), SampleSpec{DT_UINT8, {-1}});
  } else if (op == "recordio_reader") {
    // Bounded by the records' headers (ProbeReader).
    specs = {SampleSpec{DT_UINT8, {-1}}, SampleSpec{DT_FLOAT32, {-1}}};
    specs.resize(def.outputs.size());
  } else if (op == "webdataset_reader") {
    // Each component's bytes, read as its dtype (ProbeReader checks them).
    for (size_t k = 0; k < def.outputs.size(); ++k) {
      DataType type = DT_UINT8;
      if (def.attrs.count("dtypes") &&
          k < static_cast<size_t>(def.attrs.at("dtypes").list().s_size())) {
        auto parsed = ParseDataType(def.attrs.at("dtypes").list().s(k));
        if (parsed.ok()) type = *parsed;
      }
      specs.push_back(SampleSpec{type, {-1}});
    }
  } else {
    auto images =
        def.attrs.count("images") ? def.attrs.at("images").s() : std::string();
    // A bad file is the reader's to report (ProbeReader).
    auto dims = ReadIdxHeader(images);
    const bool known = dims.ok() && dims->size() == 3;
    if (!known) dims = std::vector<int64_t>{-1, -1, -1};
    specs = {SampleSpec{DT_UINT8, {(*dims)[1], (*dims)[2], 1}},
             SampleSpec{DT_INT32, {}}};
  }
  const Ref reg = AddOutput(task, "out", depth_);
  std::function<int64_t()> largest_bytes;
  if (reader) {
    std::unique_ptr<ReaderKernel> probed = ProbeReader(i, *task);
    if (probed != nullptr && op == "webdataset_reader") {
      // The tar headers bound each component's size.
      for (size_t k = 0; k < specs.size(); ++k) {
        specs[k].max_shape = {
            probed->LargestSample(static_cast<int>(k)) /
            static_cast<int64_t>(DataTypeSize(specs[k].type))};
      }
    }
    if (auto* tf = dynamic_cast<TfRecordReaderKernel*>(probed.get())) {
      for (size_t k = 0; k < specs.size(); ++k) {
        const int kk = static_cast<int>(k);
        specs[k].type = tf->type(kk);
        specs[k].max_shape = tf->shape(kk);
        if (specs[k].max_shape == std::vector<int64_t>{-1}) {
          specs[k].max_shape = {
              tf->LargestSample(kk) /
              static_cast<int64_t>(DataTypeSize(specs[k].type))};
        }
      }
    }
    if (probed != nullptr && op == "recordio_reader") {
      specs[0].max_shape = {probed->LargestSample(0)};
      if (specs.size() > 1) specs[1].max_shape = {probed->LargestSample(1) / 4};
    }
    if (probed != nullptr && op == "file_reader") {
      std::shared_ptr<ReaderKernel> reader = std::move(probed);
      largest_bytes = [reader] { return reader->LargestSample(0); };
    }
    if (auto* caffe = dynamic_cast<CaffeReaderKernel*>(probed.get());
        caffe != nullptr && caffe->LargestSample(0) >= 0) {
      // Encoded: bytes up to the largest record; raw: the records' shape.
      specs[0].max_shape = caffe->raw_shape().empty()
                               ? std::vector<int64_t>{caffe->LargestSample(0)}
                               : caffe->raw_shape();
    }
  }
  for (size_t k = 0; k < def.outputs.size(); ++k) {
    Node node{"source", specs[k], false, {reg}, {task}};
    if (k == 0) node.largest = largest_bytes;
    Declare(i, def.outputs[k], node);
  }
}

std::unique_ptr<ReaderKernel> Pipeline::Compiler::ProbeReader(
    int i, const OpConf& task) {
  std::unique_ptr<ReaderKernel> reader;
  if (p_.ops_[i].op == "file_reader") {
    reader = std::make_unique<FileReaderKernel>();
  } else if (p_.ops_[i].op == "webdataset_reader") {
    reader = std::make_unique<WebDatasetReaderKernel>();
  } else if (p_.ops_[i].op == "caffe_reader") {
    reader = std::make_unique<CaffeReaderKernel>();
  } else if (p_.ops_[i].op == "tfrecord_reader") {
    reader = std::make_unique<TfRecordReaderKernel>();
  } else if (p_.ops_[i].op == "recordio_reader") {
    reader = std::make_unique<RecordIoReaderKernel>();
  } else {
    reader = std::make_unique<IdxReaderKernel>();
  }
  TaskProto probe_task;
  probe_task.set_name(task.name());
  probe_task.mutable_kernel()->set_op_type(task.op_type());
  *probe_task.mutable_kernel()->mutable_attr() = task.attr();
  KernelInitContext ctx = MakeInitContext(
      probe_task,
      {KernelIo{"in", 1, {BlobDesc{kChunkBlob, DT_INT64, {3}, false}}, true}},
      {KernelIo{"out", 2, {}, false}});
  absl::Status init = reader->Init(ctx);
  // Its outputs still count as declared, so the operators after it are
  // checked too.
  if (!init.ok()) Problem(i, init.message());
  p_.epoch_size_ = reader->epoch_size();
  p_.dataset_size_ = reader->dataset_size();
  p_.chunks_per_epoch_ = (p_.epoch_size_ + n_ - 1) / n_;
  if (init.ok() && reader->lanes() != nullptr) {
    p_.lanes_ = std::make_unique<pipeline::LaneLayout>(*reader->lanes());
  }
  if (!init.ok()) reader.reset();
  return reader;
}

void Pipeline::Compiler::AddBatchOperator(int i) {
  const OperatorDef& def = p_.ops_[i];
  if (def.inputs.empty() || def.inputs.size() != def.outputs.size()) {
    Problem(i, "takes as many outputs as inputs (at least one)");
    return;
  }
  if (batch_op_ >= 0) {
    Problem(i,
            "a pipeline has one batch (it drops a failed sample from every "
            "output at once)");
    return;
  }
  if (def.device == "gpu") {
    Problem(i, "batches on cpu, or mixed (then copied to the GPU)");
    return;
  }
  batch_op_ = i;
  AddBatch(def, i);
}

void Pipeline::Compiler::AddBatch(const OperatorDef& batch_def, int bi) {
  auto bwhere = [&] {
    return bi >= 0 ? Where(bi) : std::string("the batch of the outputs");
  };
  std::vector<int64_t> max_override;
  if (batch_def.attrs.count("max_shape")) {
    const auto& list = batch_def.attrs.at("max_shape").list().i();
    max_override.assign(list.begin(), list.end());
  }
  const bool mixed = batch_def.device == "mixed";
  OpConf* task =
      AddOp(bi >= 0 ? UniqueTask(bi, batch_def.name) : std::string("batch"),
            "pipeline.batch", io_);
  std::vector<int64_t> counts, ranks, shapes, input_index;
  std::vector<std::string> consumed;  // each register once
  std::vector<std::string> types;
  std::vector<Node> batched;
  for (size_t k = 0; k < batch_def.inputs.size(); ++k) {
    const std::string& name = batch_def.inputs[k];
    auto it = nodes_.find(name);
    if (it == nodes_.end() || it->second.kind == "batched") {
      problems_.push_back(absl::StrCat(bwhere(), ": input '", name,
                                       it == nodes_.end()
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
    if (!spec.bounded() && spec.max_shape.size() == 1 && in.largest) {
      const int64_t largest = in.largest();
      if (largest >= 0) spec.max_shape[0] = largest;
    }
    if (!spec.bounded()) {
      problems_.push_back(absl::StrCat(
          bwhere(), ": '", name, "' has samples of ",
          ShapeString(spec.max_shape),
          " (-1: not known before the data is read); resize to a 'size' "
          "or crop before batching, or give the batch operator attr "
          "max_shape"));
      continue;
    }
    for (const Ref& ref : in.registers) {
      auto at = std::find(consumed.begin(), consumed.end(), ref.text());
      if (at == consumed.end()) {
        Consume(task, "in", ref);
        at = consumed.insert(consumed.end(), ref.text());
      }
      input_index.push_back(at - consumed.begin());
    }
    counts.push_back(static_cast<int64_t>(in.registers.size()));
    ranks.push_back(static_cast<int64_t>(spec.max_shape.size()));
    shapes.insert(shapes.end(), spec.max_shape.begin(), spec.max_shape.end());
    types.push_back(DataTypeName(spec.type));
    Node out{"batched", spec, false, {}, {task}};
    batched.push_back(out);
  }
  if (batched.size() != batch_def.inputs.size()) return;
  std::vector<std::string> finish_ops, finish_names;
  std::vector<int64_t> finish_indices;
  for (size_t k = 0; k < batch_def.inputs.size(); ++k) {
    const std::string& name = batch_def.inputs[k];
    finish_ops.push_back(FinishInBatch(name, nodes_.at(name), k, task,
                                       &finish_names, &finish_indices));
  }
  auto& attrs = *task->mutable_attr();
  if (std::any_of(finish_ops.begin(), finish_ops.end(),
                  [](const std::string& op) { return !op.empty(); })) {
    attrs["finish_ops"] = StringListAttr(finish_ops);
    attrs["finish_op_names"] = StringListAttr(finish_names);
    attrs["finish_op_indices"] = IntListAttr(finish_indices);
    attrs["seed"] = IntAttr(static_cast<int64_t>(options_.seed));
  }
  attrs["outputs"] = StringListAttr(batch_def.inputs);
  attrs["inputs_per_output"] = IntListAttr(counts);
  attrs["input_index"] = IntListAttr(input_index);
  attrs["types"] = StringListAttr(types);
  attrs["ranks"] = IntListAttr(ranks);
  attrs["max_shapes"] = IntListAttr(shapes);
  attrs["batch_size"] = IntAttr(n_);
  if (p_.lanes_ != nullptr) {
    attrs["lanes"] = IntAttr(p_.lanes_->lanes);
    attrs["first_lane"] = IntAttr(p_.lanes_->first);
    attrs["positions"] = IntAttr(p_.lanes_->positions);
  }
  for (size_t k = 0; k < batched.size(); ++k) {
    const std::string& in_name = batch_def.inputs[k];
    Node& out = batched[k];
    out.registers = {AddOutput(task, "out_" + in_name, depth_)};
    out.shapes_register = AddOutput(task, "shape_" + in_name, depth_);
    // Made on the host; the compiler copies it up for the GPU operators
    // that read it (the copy holds gpu_prefetch_depth batches).
    out.on_device = mixed;
    // The implied batch keeps each node's name for its batched form.
    nodes_.erase(batch_def.outputs[k]);
    nodes_.emplace(batch_def.outputs[k], out);
  }
}

std::string Pipeline::Compiler::FinishInBatch(const std::string& name,
                                              const Node& in, size_t k,
                                              OpConf* task,
                                              std::vector<std::string>* names,
                                              std::vector<int64_t>* indices) {
  names->push_back("");
  indices->push_back(0);
  // A fusion as fuse_decode's are: off, every operator runs as written.
  if (!options_.fuse_decode || in.kind != "sample" || in.tasks.empty() ||
      consumers_[name] != 1) {
    return "";
  }
  for (const OpConf* chain : in.tasks) {
    if (chain->op_type() != "pipeline.chain" ||
        chain->attr().at("ops").list().s_size() < 2) {
      return "";
    }
  }
  const auto& chain_attrs = in.tasks[0]->attr();
  const int last = chain_attrs.at("ops").list().s_size() - 1;
  const std::string op = chain_attrs.at("ops").list().s(last);
  auto sample_op = pipeline::MakeSampleOp(op);
  if (!sample_op.ok() || !(*sample_op)->finishes_in_batch()) return "";
  const std::string prefix = absl::StrCat(last, ".");
  auto& attrs = *task->mutable_attr();
  for (const auto& [key, value] : chain_attrs) {
    if (absl::StartsWith(key, prefix)) {
      attrs[absl::StrCat("finish.", k, ".", key.substr(prefix.size()))] = value;
    }
  }
  names->back() = chain_attrs.at("op_names").list().s(last);
  indices->back() = chain_attrs.at("op_indices").list().i(last);
  for (OpConf* chain : in.tasks) {
    (*chain->mutable_attr())["finish_in_batch"] = BoolAttr(true);
  }
  return op;
}

void Pipeline::Compiler::AddImpliedBatch() {
  OperatorDef implied;
  implied.op = "batch";
  implied.name = "batch";
  for (const std::string& name : p_.output_names_) {
    auto it = nodes_.find(name);
    if (it != nodes_.end() && it->second.kind != "batched") {
      implied.inputs.push_back(name);
      implied.outputs.push_back(name);
    }
  }
  if (!implied.inputs.empty()) AddBatch(implied, -1);
}

void Pipeline::Compiler::AddDenseOperator(int i, const Node& in) {
  const OperatorDef& def = p_.ops_[i];
  const std::string& op = def.op;
  const bool gpu = def.device == "gpu";
  if (gpu != in.on_device) {
    Problem(i, absl::StrCat(
                   "runs on ", def.device, " but its input '", def.inputs[0],
                   "' is in ", in.on_device ? "GPU" : "host",
                   " memory (a mixed batch moves batches to the GPU)"));
    return;
  }
  if (def.attrs.count("round")) {
    // The batched cast kernel (kernels/convert.h) truncates.
    Problem(i,
            "attr 'round' applies to samples; on batches a cast "
            "truncates (cast before the batch to round)");
    return;
  }
  OpConf* task = AddOp(UniqueTask(i, def.name), op, io_, gpu);
  auto& attrs = *task->mutable_attr();
  for (const auto& [key, value] : def.attrs) attrs[key] = value;
  Consume(task, "in", in.registers[0]);
  Node node = in;
  node.registers = {AddOutput(task, "out", gpu ? gpu_depth_ : depth_)};
  node.tasks = {task};
  if (op == "normalize") node.spec.type = DT_FLOAT32;
  if (op == "cast") {
    auto to = ParseDataType(def.attrs.count("to") ? def.attrs.at("to").s()
                                                  : std::string());
    if (to.ok()) node.spec.type = *to;
  }
  Declare(i, def.outputs[0], node);
}

void Pipeline::Compiler::AddSampleOperator(int i, const Node& in,
                                           SampleOp& sample_op) {
  const OperatorDef& def = p_.ops_[i];
  const std::string& op = def.op;
  if (def.device != "cpu") {
    Problem(i,
            "per-sample operators run on cpu; after a mixed batch, cast and "
            "normalize run on the GPU");
    return;
  }
  if (in.kind == "batched") {
    Problem(i, absl::StrCat("'", op, "' works on samples, but '", def.inputs[0],
                            "' is already batched"));
    return;
  }
  TaskProto probe_task;
  auto& probe_attrs = *probe_task.mutable_kernel()->mutable_attr();
  for (const auto& [key, value] : def.attrs) probe_attrs[key] = value;
  KernelInitContext probe = MakeInitContext(probe_task, {}, {});
  absl::Status init = sample_op.Init(probe);
  auto spec =
      init.ok() ? sample_op.Infer(in.spec) : absl::StatusOr<SampleSpec>(init);
  if (!spec.ok()) {
    Problem(i, spec.status().message());
    return;
  }
  // Fused into the chain that makes its input, when nothing else reads
  // that input: the sample then never leaves the worker's scratch. (An
  // arith, cat or stack stage is no chain: what follows it gets stages of
  // its own.)
  if (in.kind == "sample" && consumers_[def.inputs[0]] == 1 &&
      !IsCombineTask(*in.tasks[0])) {
    FuseIntoChain(i, in, *spec);
  } else {
    AddStages(i, in, *spec);
  }
}

void Pipeline::Compiler::FuseIntoChain(int i, const Node& in,
                                       const SampleSpec& spec) {
  const OperatorDef& def = p_.ops_[i];
  Node node{"sample", spec, false, in.registers, in.tasks};
  node.chain = in.chain + "+" + def.name;
  for (int w = 0; w < workers_; ++w) {
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
    attrs["ops"].mutable_list()->add_s(def.op);
    attrs["op_names"].mutable_list()->add_s(def.name);
    attrs["op_indices"].mutable_list()->add_i(i);
    for (const auto& [key, value] : def.attrs) {
      attrs[absl::StrCat(j, ".", key)] = value;
    }
    attrs["output"] = StringAttr(def.outputs[0]);
    task->set_name(UniqueTask(
        i, workers_ == 1 ? node.chain : absl::StrCat(node.chain, "@", w)));
  }
  Declare(i, def.outputs[0], node);
}

void Pipeline::Compiler::AddStages(int i, const Node& in,
                                   const SampleSpec& spec) {
  const OperatorDef& def = p_.ops_[i];
  Node node{"sample", spec, false, {}, {}};
  node.chain = def.name;
  for (int w = 0; w < workers_; ++w) {
    const std::string name =
        workers_ == 1 ? def.name : absl::StrCat(def.name, "@", w);
    OpConf* task = AddOp(UniqueTask(i, name), "pipeline." + def.op, w);
    auto& attrs = *task->mutable_attr();
    for (const auto& [key, value] : def.attrs) {
      if (kStageAttrs.count(key)) {
        Problem(i, absl::StrCat("attr '", key, "' is the pipeline's to set"));
      }
      attrs[key] = value;
    }
    attrs["input"] = StringAttr(def.inputs[0]);
    attrs["output"] = StringAttr(def.outputs[0]);
    attrs["worker"] = IntAttr(w);
    attrs["workers"] = IntAttr(workers_);
    attrs["seed"] = IntAttr(static_cast<int64_t>(options_.seed));
    attrs["op_index"] = IntAttr(i);
    attrs["op_name"] = StringAttr(def.name);
    attrs["batch_size"] = IntAttr(n_);
    attrs["skip_errors"] = BoolAttr(skip_);
    attrs["fuse_decode"] = BoolAttr(options_.fuse_decode);
    // The first stage after the reader claims samples as its workers get
    // free; later stages keep what their worker's first stage took.
    attrs["deal"] = StringAttr(in.kind != "source" ? "all"
                               : static_deal_      ? "static"
                                                   : "dynamic");
    Consume(task, "in",
            in.kind == "source" ? in.registers[0] : in.registers[w]);
    node.registers.push_back(AddOutput(task, "out", depth_));
    node.tasks.push_back(task);
  }
  Declare(i, def.outputs[0], node);
}

// Each worker's registers of the input nodes hold the same samples (those
// at p % workers == worker: static_deal_), in the same order, and that
// worker's stage combines them; a source's register holds all, of which it
// takes its own.
void Pipeline::Compiler::AddCombine(int i,
                                    const std::vector<const Node*>& inputs) {
  const OperatorDef& def = p_.ops_[i];
  if (def.device != "cpu") {
    Problem(i, "per-sample operators run on cpu");
    return;
  }
  for (size_t k = 0; k < inputs.size(); ++k) {
    if (inputs[k]->kind == "batched") {
      Problem(i, absl::StrCat("takes per-sample data; '", def.inputs[k],
                              "' is already batched"));
      return;
    }
  }
  absl::StatusOr<std::vector<SampleSpec>> specs;
  if (def.op == "function") {
    specs = FunctionSpecs(i, inputs);
  } else if (auto multi = pipeline::MakeMultiSampleOp(def.op)) {
    specs = MultiSampleSpecs(i, *multi, inputs);
  } else {
    auto spec = def.op == "arith" ? ArithSpec(i, *inputs[0], *inputs[1])
                                  : JoinSpec(i, inputs);
    specs = spec.ok() ? absl::StatusOr<std::vector<SampleSpec>>(
                            std::vector<SampleSpec>{*spec})
                      : spec.status();
  }
  if (!specs.ok()) {
    Problem(i, specs.status().message());
    return;
  }
  if (specs->size() != def.outputs.size()) {
    Problem(i, absl::StrCat("makes ", specs->size(), " outputs, ",
                            def.outputs.size(), " named"));
    return;
  }
  Node node{"sample", {}, false, {}, {}};
  node.chain = def.name;
  for (int w = 0; w < workers_; ++w) {
    const std::string name =
        workers_ == 1 ? def.name : absl::StrCat(def.name, "@", w);
    OpConf* task =
        AddOp(UniqueTask(i, name), absl::StrCat("pipeline.", def.op), w);
    auto& attrs = *task->mutable_attr();
    for (const auto& [key, value] : def.attrs) attrs[key] = value;
    std::vector<std::string> deals;
    for (const Node* in : inputs) {
      // A source's one register holds every sample: this worker's are
      // those at p % workers == worker, as its stages take them
      // (static_deal_).
      deals.push_back(in->kind == "source" ? "static" : "all");
    }
    attrs["operands"] = StringListAttr(def.inputs);
    attrs["deals"] = StringListAttr(deals);
    attrs["outputs"] = StringListAttr(def.outputs);
    attrs["op_name"] = StringAttr(def.name);
    attrs["seed"] = IntAttr(static_cast<int64_t>(options_.seed));
    attrs["op_index"] = IntAttr(i);
    attrs["batch_size"] = IntAttr(n_);
    attrs["skip_errors"] = BoolAttr(skip_);
    attrs["worker"] = IntAttr(w);
    attrs["workers"] = IntAttr(workers_);
    // In input order, each register once (x + x reads one register: a
    // task consumes a register once).
    std::set<std::string> consumed;
    for (const Node* in : inputs) {
      const Ref& from =
          in->kind == "source" ? in->registers[0] : in->registers[w];
      if (consumed.insert(from.text()).second) Consume(task, "in", from);
    }
    node.registers.push_back(AddOutput(task, "out", depth_));
    node.tasks.push_back(task);
  }
  // Every output lives in the same registers, a sample list each.
  for (size_t o = 0; o < def.outputs.size(); ++o) {
    node.spec = (*specs)[o];
    Declare(i, def.outputs[o], node);
  }
}

// A function's outputs are what it returns for zero samples of its inputs'
// largest shapes (an extent not known before the data is read taken as 1):
// their types and ranks, and as bounds those shapes when every input's
// shape is bounded (else not known: the batch then needs its box given).
absl::StatusOr<std::vector<SampleSpec>> Pipeline::Compiler::FunctionSpecs(
    int i, const std::vector<const Node*>& inputs) {
  const OperatorDef& def = p_.ops_[i];
  if (!def.attrs.count("function") ||
      def.attrs.at("function").value_case() != AttrValue::kI) {
    return absl::InvalidArgumentError(
        "attr 'function': the id of a registered sample function (an int) is "
        "required");
  }
  auto function = pipeline::FindSampleFunction(def.attrs.at("function").i());
  if (function == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'function': no sample function ",
                     def.attrs.at("function").i(), " is registered"));
  }
  std::vector<pipeline::Sample> zeros(inputs.size());
  std::vector<pipeline::SampleRef> refs;
  bool bounded = true;
  for (size_t k = 0; k < inputs.size(); ++k) {
    std::vector<int64_t> shape = inputs[k]->spec.max_shape;
    for (int64_t& d : shape) {
      bounded = bounded && d >= 0;
      d = std::max<int64_t>(d, 1);
    }
    zeros[k].Reshape(inputs[k]->spec.type, shape);
    std::fill(zeros[k].storage.begin(), zeros[k].storage.end(), 0);
    refs.push_back(zeros[k].ref());
  }
  std::vector<pipeline::Sample> outs(def.outputs.size());
  absl::Status called = function->Call(refs, absl::MakeSpan(outs));
  if (!called.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "called with zero samples of its inputs' largest shapes to learn "
        "its outputs' types and shapes, it failed: ",
        called.message()));
  }
  std::vector<SampleSpec> specs;
  for (const pipeline::Sample& out : outs) {
    SampleSpec spec{out.type, {out.shape.begin(), out.shape.end()}};
    if (!bounded) std::fill(spec.max_shape.begin(), spec.max_shape.end(), -1);
    specs.push_back(std::move(spec));
  }
  return specs;
}

// The operator checks its attributes and infers from its inputs', as its
// stages will.
absl::StatusOr<std::vector<SampleSpec>> Pipeline::Compiler::MultiSampleSpecs(
    int i, pipeline::MultiSampleOp& op,
    const std::vector<const Node*>& inputs) {
  TaskProto probe_task;
  auto& probe_attrs = *probe_task.mutable_kernel()->mutable_attr();
  for (const auto& [key, value] : p_.ops_[i].attrs) probe_attrs[key] = value;
  absl::Status init = op.Init(MakeInitContext(probe_task, {}, {}));
  if (!init.ok()) return init;
  std::vector<SampleSpec> in;
  for (const Node* node : inputs) in.push_back(node->spec);
  return op.Infer(in);
}

// The bound, broadcast as NumPy's (Arith): the shapes aligned at their last
// axes, along each the larger bound, or the other where one is 1.
absl::StatusOr<SampleSpec> Pipeline::Compiler::ArithSpec(int i, const Node& a,
                                                         const Node& b) {
  const OperatorDef& def = p_.ops_[i];
  auto op = ParseArithOp(def.attrs.count("op") ? def.attrs.at("op").s()
                                               : std::string());
  if (!op.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'op': ", op.status().message()));
  }
  const std::vector<int64_t>& sa = a.spec.max_shape;
  const std::vector<int64_t>& sb = b.spec.max_shape;
  const size_t rank = std::max(sa.size(), sb.size());
  SampleSpec spec{DT_FLOAT32, std::vector<int64_t>(rank)};
  for (size_t d = 0; d < rank; ++d) {
    const int64_t x = d + sa.size() >= rank ? sa[d + sa.size() - rank] : 1;
    const int64_t y = d + sb.size() >= rank ? sb[d + sb.size() - rank] : 1;
    spec.max_shape[d] = x == 1           ? y
                        : y == 1         ? x
                        : x < 0 || y < 0 ? -1
                                         : std::max(x, y);
  }
  return spec;
}

// cat and stack (Concatenate): one type and rank; the bound along the join
// axis the sum of the inputs' (cat) or their count (stack, a new axis), and
// along every other the largest.
absl::StatusOr<SampleSpec> Pipeline::Compiler::JoinSpec(
    int i, const std::vector<const Node*>& inputs) {
  const OperatorDef& def = p_.ops_[i];
  if (!def.attrs.count("axis") ||
      def.attrs.at("axis").value_case() != AttrValue::kI) {
    return absl::InvalidArgumentError("attr 'axis': an int is required");
  }
  const bool stack = def.op == "stack";
  const SampleSpec& first = inputs[0]->spec;
  const int64_t rank = static_cast<int64_t>(first.max_shape.size());
  auto axis = pipeline::JoinAxis(def.attrs.at("axis").i(), rank, stack);
  if (!axis.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("attr 'axis': ", axis.status().message()));
  }
  SampleSpec spec{first.type, {}};
  std::vector<int64_t> bound(first.max_shape);
  if (!stack) bound[*axis] = 0;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const SampleSpec& in = inputs[k]->spec;
    if (in.type != first.type) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", def.inputs[k], "' is ", DataTypeName(in.type),
                       ", '", def.inputs[0], "' ", DataTypeName(first.type),
                       ": join samples of one type (cast one)"));
    }
    if (static_cast<int64_t>(in.max_shape.size()) != rank) {
      return absl::InvalidArgumentError(
          absl::StrCat("input '", def.inputs[k], "' has ", in.max_shape.size(),
                       " dimension(s), '", def.inputs[0], "' ", rank,
                       ": join samples of one rank"));
    }
    for (int64_t d = 0; d < rank; ++d) {
      const int64_t x = in.max_shape[d];
      if (!stack && d == *axis) {
        bound[d] = x < 0 || bound[d] < 0 ? -1 : bound[d] + x;
      } else {
        bound[d] = x < 0 || bound[d] < 0 ? -1 : std::max(bound[d], x);
      }
    }
  }
  if (stack) {
    bound.insert(bound.begin() + *axis, static_cast<int64_t>(inputs.size()));
  }
  spec.max_shape = bound;
  return spec;
}

void Pipeline::Compiler::CheckSourcesAndOutputs() {
  if (sources_ == 0) {
    problems_.push_back(
        "the pipeline has no reader (file_reader, idx_reader) or "
        "external_source");
  }
  if (p_.output_names_.empty()) {
    problems_.push_back("no outputs: call SetOutputs with the nodes to batch");
  }
}

void Pipeline::Compiler::AddFetches() {
  for (const std::string& name : p_.output_names_) {
    auto it = nodes_.find(name);
    if (it == nodes_.end()) {
      problems_.push_back(
          absl::StrCat("SetOutputs: '", name, "' is no operator's output"));
      continue;
    }
    Node& node = it->second;
    if (node.kind != "batched") {
      // Only with an explicit batch operator: otherwise the implied one
      // takes every output still unbatched.
      problems_.push_back(absl::StrCat(
          "SetOutputs: '", name,
          "' is not batched: with a batch operator, every output must come "
          "out of it (the one batch drops a failed sample from all outputs)"));
      continue;
    }
    Consume(AddOp(absl::StrCat("out.", name), "fetch", io_), "in",
            node.registers[0]);
    Consume(AddOp(absl::StrCat("out.", name, ".shape"), "fetch", io_), "in",
            node.shapes_register);
  }
}

absl::Status Pipeline::Compiler::WritePlan() {
  JobCompileOptions compile;
  KernelBindings kernels;
  p_.BindKernels(&kernels);
  compile.bindings = &kernels;
  compile.probe = options_.probe;
  absl::StatusOr<CompiledJob> compiled = CompileJob(job_.job(), compile);
  if (!compiled.ok()) {
    return absl::Status(
        compiled.status().code(),
        absl::StrCat("pipeline plan: ", compiled.status().message()));
  }
  p_.plan_ = std::move(compiled->plan);
  // The copies the compiler inserted: onto the GPU, gpu_prefetch_depth
  // batches; off it, prefetch_depth.
  for (TaskProto& task : *p_.plan_.mutable_task()) {
    const std::string& op_type = task.kernel().op_type();
    if (op_type != "h2d" && op_type != "d2h") continue;
    for (auto& [key, desc] : *task.mutable_produced_regst_desc()) {
      desc.set_register_num(op_type == "h2d" ? gpu_depth_ : depth_);
    }
  }
  if (!p_.externals_.empty()) p_.epoch_size_ = p_.dataset_size_ = -1;
  return absl::OkStatus();
}

absl::Status Pipeline::Compile() {
  absl::Status options = Compiler::CheckOptions(options_);
  if (!options.ok()) return options;
  depth_ = options_.prefetch_depth;
  dealers_ = std::make_unique<SampleDealers>(depth_);
  return Compiler(this).Run();
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
