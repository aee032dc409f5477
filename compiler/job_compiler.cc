#include "actorflow/job_compiler.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <queue>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "actorflow/blob_desc.h"
#include "compiler/memory_sharing.h"
#include "compiler/signature.h"
#include "compiler/signature_rules.h"
#include "plan/cycles.h"
#include "plan/plan_builder.h"
#include "plan/plan_writer.h"
#include "plan/register_lifetimes.h"
#include "thread/balanced_splitter.h"

namespace actorflow::internal {
namespace {

// One device of a placement, or one tower of it (Placement.replicas):
// towers of a device share its memory and its stream numbers. CPU devices
// of one machine share its memory.
struct Device {
  int32_t machine = 0;
  DeviceKinds::Value type = DeviceKinds::CPU;
  int32_t index = 0;
  int32_t replica = 0;

  bool operator==(const Device& o) const {
    return machine == o.machine && type == o.type && index == o.index &&
           replica == o.replica;
  }
  bool operator<(const Device& o) const {
    return std::tie(machine, type, index, replica) <
           std::tie(o.machine, o.type, o.index, o.replica);
  }
  Device physical() const { return Device{machine, type, index, 0}; }
  // Where host work for this device (boxing) runs: a CPU device itself, a
  // GPU's machine's first CPU device.
  Device host() const {
    return type == DeviceKinds::CPU ? *this
                                    : Device{machine, DeviceKinds::CPU, 0, 0};
  }
  bool shares_memory_with(const Device& o) const {
    return machine == o.machine && type == o.type &&
           (type == DeviceKinds::CPU || index == o.index);
  }
  std::string ToString() const {
    return absl::StrCat(machine == 0 ? "" : absl::StrCat("m", machine, "."),
                        type == DeviceKinds::GPU ? "gpu" : "cpu", index,
                        replica == 0 ? "" : absl::StrCat("r", replica));
  }
};

struct Input {
  std::string text;  // as the job wrote it
  std::string key;   // consumed under
  int producer = -1;
  std::string output;
  Signature signature;
};

struct Op {
  const OpConf* conf = nullptr;
  std::vector<Device> devices;
  std::vector<Input> inputs;
  std::set<std::string> outputs;
  std::map<std::string, Signature> output_signature;
  // What the op_type's rule made of its inputs (signature_rules.h).
  std::map<std::string, Signature> inferred_outputs;
  std::map<std::string, std::vector<BlobDesc>> blobs;  // logical
  // Per output, per device: the physical register.
  std::map<std::string, std::vector<int64_t>> registers;
  std::vector<TaskProto*> tasks;  // per device

  const std::string& name() const { return conf->name(); }
  int parallel() const { return static_cast<int>(devices.size()); }
};

std::string OpLabel(const Op& op) {
  return absl::StrCat("op '", op.name(), "'");
}

std::string InputLabel(const Op& op, int i) {
  return absl::StrCat("op '", op.name(), "' input ", i, " ('",
                      op.inputs[i].text, "')");
}

std::vector<BlobDescProto> StatedBlobs(const OpConf& conf) {
  std::vector<BlobDescProto> blobs(conf.blob().begin(), conf.blob().end());
  if (!conf.shape().empty()) {
    blobs.push_back(BlobProto(
        "data", DT_FLOAT32,
        std::vector<int64_t>(conf.shape().begin(), conf.shape().end())));
  }
  return blobs;
}

// The one naming rule for inserted tasks, in every pass: named after what
// they serve, and a name already taken gets "#2", "#3", ... (the same
// producer gathered at two places, a third read of one output).
std::string UniqueName(const std::string& name, std::set<std::string>* taken) {
  std::string unique = name;
  for (int k = 2; !taken->insert(unique).second; ++k) {
    unique = absl::StrCat(name, "#", k);
  }
  return unique;
}

// A task reads a register once (the plan format): a reader of one register
// under several inputs (add(x, x, x)) reads it through an `identity` copy
// each time after the first, named so.
std::string AgainName(const std::string& producer, const std::string& reader) {
  return absl::StrCat(producer, ":again@", reader);
}

enum class TaskKind { kOp, kCopy, kBoxing };

struct TaskInfo {
  Device device;
  int stage = 0;
  TaskKind kind = TaskKind::kOp;
};

class Compiler {
 public:
  Compiler(const Job& job, const JobCompileOptions& options)
      : job_(job), options_(options) {}

  absl::StatusOr<CompiledJob> Compile() {
    ReadOps();
    if (problems_.empty()) OrderOps();
    if (problems_.empty()) InferLogicalShapes();
    if (problems_.empty()) ResolveSignatures();
    if (problems_.empty()) ReportSignatures();
    if (problems_.empty()) MakeOpTasks();
    if (problems_.empty()) Wire();
    if (!problems_.empty()) return Failed();
    AssignStreams();
    SizeRegisters();
    absl::Status fitted = FitBudget();
    if (!fitted.ok()) return fitted;
    writer_.plan().set_total_piece_num(job_.total_piece_num());
    report_.ops = static_cast<int>(ops_.size());
    report_.tasks = writer_.plan().task_size();
    return CompiledJob{std::move(writer_.plan()), std::move(report_)};
  }

 private:
  absl::Status Failed() const {
    return absl::InvalidArgumentError(absl::StrJoin(problems_, "\n"));
  }
  void Problem(std::string text) { problems_.push_back(std::move(text)); }

  // Names, placements, inputs and stated signatures.
  void ReadOps() {
    if (job_.total_piece_num() < 0) {
      Problem("job: total_piece_num must be >= 0");
    }
    if (job_.streams_per_device() < 0) {
      Problem("job: streams_per_device must be >= 0");
    }
    if (job_.memory_budget_bytes() < 0) {
      Problem("job: memory_budget_bytes must be >= 0 (0: the default limit)");
    }
    if (!Job::PartialSumReduction_IsValid(job_.partial_sum_reduction())) {
      Problem(absl::StrCat("job: partial_sum_reduction ",
                           job_.partial_sum_reduction(),
                           " is none of PARTIAL_SUM_AUTO (0), "
                           "PARTIAL_SUM_GATHER (1), PARTIAL_SUM_SCATTER (2)"));
    }
    if (job_.op().empty()) Problem("job: no op");
    ops_.resize(job_.op_size());
    for (int i = 0; i < job_.op_size(); ++i) {
      const OpConf& conf = job_.op(i);
      ops_[i].conf = &conf;
      if (conf.name().empty()) {
        Problem(absl::StrCat("op ", i, ": name is empty"));
      } else if (!by_name_.emplace(conf.name(), i).second) {
        Problem(absl::StrCat("op '", conf.name(), "': the name is taken by op ",
                             by_name_[conf.name()]));
      }
      if (conf.op_type().empty()) {
        Problem(absl::StrCat(OpLabel(ops_[i]), ": op_type is empty"));
      }
      if (conf.stage() < 0) {
        Problem(absl::StrCat(OpLabel(ops_[i]), ": stage must be >= 0"));
      }
      ReadPlacement(&ops_[i]);
      if (!StatedBlobs(conf).empty()) ops_[i].outputs.insert("out");
      for (const std::string& out : conf.output()) ops_[i].outputs.insert(out);
    }
    for (Op& op : ops_) ReadInputs(&op);
    for (Op& op : ops_) ReadRegisterNums(op);
  }

  // After ReadInputs, which adds the outputs that inputs name.
  void ReadRegisterNums(const Op& op) {
    for (const auto& [out, num] : op.conf->register_num()) {
      const std::string where =
          absl::StrCat(OpLabel(op), ": register_num['", out, "']");
      if (!op.outputs.count(out)) {
        Problem(absl::StrCat(where, " names no output of it"));
      } else if (num < 1) {
        Problem(absl::StrCat(where, " is ", num, "; give 1 or more"));
      } else if (op.conf->initial() && num != 1) {
        Problem(absl::StrCat(where, " is ", num,
                             "; an initial op's registers hold one buffer"));
      }
    }
  }

  void ReadPlacement(Op* op) {
    const Placement& p = op->conf->placement();
    std::vector<int32_t> machines(p.machine_id().begin(), p.machine_id().end());
    std::vector<int32_t> devices(p.device_id().begin(), p.device_id().end());
    if (machines.empty()) machines.push_back(0);
    if (devices.empty()) devices.push_back(0);
    for (auto* list : {&machines, &devices}) {
      const char* field = list == &machines ? "machine_id" : "device_id";
      std::set<int32_t> seen;
      for (int32_t id : *list) {
        if (id < 0) {
          Problem(absl::StrCat(OpLabel(*op), ": placement.", field, " ", id,
                               " is negative"));
        } else if (!seen.insert(id).second) {
          Problem(absl::StrCat(OpLabel(*op), ": placement.", field, " ", id,
                               " is listed twice"));
        }
      }
    }
    if (p.replicas() < 0) {
      Problem(absl::StrCat(OpLabel(*op), ": placement.replicas ", p.replicas(),
                           " is negative"));
    }
    const int replicas = std::max(1, p.replicas());
    for (int32_t m : machines) {
      for (int32_t d : devices) {
        for (int r = 0; r < replicas; ++r) {
          op->devices.push_back({m, p.device_type(), d, r});
        }
      }
    }
    if (p.device_type() == DeviceKinds::GPU) {
      // Machines of one job are alike: this one stands for them all.
      for (int32_t d : devices) {
        absl::Status available = d < 0 ? absl::OkStatus() : options_.probe(d);
        if (!available.ok()) {
          Problem(absl::StrCat(
              OpLabel(*op), ": placement on gpu ", d,
              ": this machine cannot serve it: ", available.message()));
        }
      }
    }
  }

  void ReadInputs(Op* op) {
    const OpConf& conf = *op->conf;
    if (!conf.input_signature().empty() &&
        conf.input_signature_size() != conf.input_size()) {
      Problem(absl::StrCat(OpLabel(*op), ": ", conf.input_signature_size(),
                           " input_signature for ", conf.input_size(),
                           " inputs (give one per input, or none)"));
    }
    for (int i = 0; i < conf.input_size(); ++i) {
      Input in;
      in.text = conf.input(i);
      std::string ref = in.text;
      in.key = "in";
      if (const size_t eq = ref.find('='); eq != std::string::npos) {
        in.key = ref.substr(0, eq);
        ref = ref.substr(eq + 1);
      }
      // The whole text names an op (its output "out"); else the longest
      // part before a dot that names one does, and the rest (dots and all)
      // is the output: "a.b.x.y" is op "a.b"'s output "x.y" when "a.b" is
      // an op and "a.b.x" is not.
      in.output = "out";
      std::string producer = ref;
      if (!by_name_.count(ref)) {
        for (size_t dot = ref.rfind('.'); dot != std::string::npos && dot > 0;
             dot = ref.rfind('.', dot - 1)) {
          if (by_name_.count(ref.substr(0, dot))) {
            producer = ref.substr(0, dot);
            in.output = ref.substr(dot + 1);
            break;
          }
        }
      }
      op->inputs.push_back(in);
      const int index = static_cast<int>(op->inputs.size()) - 1;
      if (in.key.empty() || in.output.empty() || producer.empty()) {
        Problem(absl::StrCat(InputLabel(*op, index),
                             ": write \"producer.output\", \"producer\" or "
                             "\"key=producer.output\""));
        continue;
      }
      auto it = by_name_.find(producer);
      if (it == by_name_.end()) {
        // "producer.output" is the common form: name the producer part.
        const size_t dot = producer.rfind('.');
        Problem(absl::StrCat(
            InputLabel(*op, index), ": no op named '",
            dot == std::string::npos ? producer : producer.substr(0, dot),
            "'"));
        continue;
      }
      op->inputs.back().producer = it->second;
      ops_[it->second].outputs.insert(in.output);
    }
  }

  // Topological order; edges out of `initial` operators close cycles and
  // are left out. A cycle without one is refused, naming its ops in edge
  // direction (not those that only wait behind it).
  void OrderOps() {
    const int n = static_cast<int>(ops_.size());
    std::vector<std::vector<int>> consumers(n), producers(n);
    std::vector<int> waiting(n, 0);
    for (int c = 0; c < n; ++c) {
      for (const Input& in : ops_[c].inputs) {
        if (ops_[in.producer].conf->initial()) continue;
        consumers[in.producer].push_back(c);
        producers[c].push_back(in.producer);
        ++waiting[c];
      }
    }
    std::queue<int> ready;
    for (int i = 0; i < n; ++i) {
      if (waiting[i] == 0) ready.push(i);
    }
    std::vector<bool> ordered(n, false);
    while (!ready.empty()) {
      const int op = ready.front();
      ready.pop();
      order_.push_back(op);
      ordered[op] = true;
      for (int c : consumers[op]) {
        if (--waiting[c] == 0) ready.push(c);
      }
    }
    for (const std::vector<int>& cycle :
         CyclesAmongUnordered(producers, ordered)) {
      std::vector<std::string> names;
      for (int op : cycle) {
        names.push_back(absl::StrCat("'", ops_[op].name(), "'"));
      }
      Problem(absl::StrCat(
          "job: ",
          cycle.size() == 1
              ? absl::StrCat("op ", names[0], " reads its own output")
              : absl::StrCat("ops ", absl::StrJoin(names, ", "),
                             " wait on each other in a cycle"),
          "; a cycle needs an op with `initial: true` on it (its outputs are "
          "there before it acts)"));
    }
  }

  // Every operator's outputs as one task on one CPU thread would make them:
  // the logical blobs. Kernels' Init errors name the task, which is the op.
  void InferLogicalShapes() {
    PlanWriter writer;
    std::vector<TaskProto*> tasks;
    std::map<std::pair<int, std::string>, int64_t> ids;
    std::set<std::string> names;
    for (const Op& op : ops_) names.insert(op.name());
    for (Op& op : ops_) {
      TaskProto* task =
          writer.AddTask(op.name(), op.conf->op_type(), CpuStream(0));
      *task->mutable_kernel()->mutable_attr() = op.conf->attr();
      tasks.push_back(task);
      for (const std::string& out : op.outputs) {
        std::vector<BlobDescProto> blobs;
        if (out == "out") blobs = StatedBlobs(*op.conf);
        const int64_t id = writer.AddOutput(task, out, 1, false, blobs);
        writer.Desc(id).set_initial_register(op.conf->initial());
        ids[{static_cast<int>(&op - ops_.data()), out}] = id;
      }
    }
    for (size_t c = 0; c < ops_.size(); ++c) {
      std::set<int64_t> read;
      for (const Input& in : ops_[c].inputs) {
        int64_t id = ids[{in.producer, in.output}];
        if (!read.insert(id).second) {
          // Read again: through a copy, as in the physical plan.
          TaskProto* copy = writer.AddTask(
              UniqueName(AgainName(ops_[in.producer].name(), ops_[c].name()),
                         &names),
              "identity", CpuStream(0));
          writer.Consume(copy, "in", id);
          id = writer.AddOutput(copy, "out", 1, false);
        }
        writer.Consume(tasks[c], in.key, id);
      }
    }
    writer.plan().set_total_piece_num(1);
    CompileOptions compile;
    compile.bindings = options_.bindings;
    compile.probe = [](int) { return absl::OkStatus(); };
    compile.max_register_bytes = INT64_MAX / 4;
    absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
        CompilePlan(std::move(writer.plan()), compile);
    if (!compiled.ok()) {
      for (absl::string_view line :
           absl::StrSplit(compiled.status().message(), '\n')) {
        Problem(AsOpProblem(std::string(line)));
      }
      return;
    }
    for (const auto& [key, id] : ids) {
      ops_[key.first].blobs[key.second] = (*compiled)->blobs.at(id);
    }
  }

  // "task 'x' (task_id 3): ..." -> "op 'x': ...": the logical plan's tasks
  // are the job's operators.
  std::string AsOpProblem(std::string line) const {
    size_t at = 0;
    while ((at = line.find("task '", at)) != std::string::npos) {
      line.replace(at, 6, "op '");
      const size_t close = line.find('\'', at + 4);
      if (close == std::string::npos) break;
      const size_t id = line.find(" (task_id ", close);
      if (id == close + 1) {
        const size_t end = line.find(')', id);
        if (end != std::string::npos) line.erase(id, end - id + 1);
      }
      at = close;
    }
    if (absl::StrContains(line, "produced_regst_desc['") &&
        absl::StrContains(line, "']: missing")) {
      absl::StrAppend(&line,
                      " (list it under the op's `output`, or give it a "
                      "consumer)");
    }
    return line;
  }

  // Producers before consumers, so a consumer may inherit its producer's.
  // Initial operators' outputs depend on nothing they read: first; their
  // inputs, read from later operators, last.
  void ResolveSignatures() {
    for (Op& op : ops_) {
      if (op.conf->initial()) ResolveOutputs(&op);
    }
    for (int index : order_) {
      Op& op = ops_[index];
      if (op.conf->initial()) continue;
      ResolveInputs(&op);
      ResolveOutputs(&op);
    }
    for (Op& op : ops_) {
      if (op.conf->initial()) ResolveInputs(&op);
    }
  }

  void ReportSignatures() {
    for (const Op& op : ops_) {
      if (op.parallel() == 1) continue;
      std::string line =
          absl::StrCat(OpLabel(op), " on ", op.parallel(), " devices:");
      for (const Input& in : op.inputs) {
        absl::StrAppend(&line, " ", in.key, "=", in.signature.ToString());
      }
      absl::StrAppend(&line, " ->");
      for (const auto& [out, sig] : op.output_signature) {
        absl::StrAppend(&line, " ", out, "=", sig.ToString());
      }
      report_.signatures.push_back(std::move(line));
    }
  }

  void ResolveOutputs(Op* op) {
    const OpConf& conf = *op->conf;
    for (const auto& [name, proto] : conf.output_signature()) {
      if (!op->outputs.count(name)) {
        Problem(absl::StrCat(OpLabel(*op), ": output_signature['", name,
                             "'] names no output of it"));
      }
    }
    for (const std::string& out : op->outputs) {
      Signature sig = Signature::Whole();
      auto given = conf.output_signature().find(out);
      auto inferred = op->inferred_outputs.find(out);
      if (given != conf.output_signature().end()) {
        sig = Signature::FromProto(given->second);
      } else if (inferred != op->inferred_outputs.end() && !conf.initial()) {
        sig = inferred->second;
      } else if (op->inputs.empty() || conf.initial()) {
        sig = conf.initial() ? Signature::Whole() : Signature::Split(0);
      } else {
        sig = op->inputs[0].signature;
      }
      if (op->parallel() == 1) sig = Signature::Whole();
      CheckAxis(sig, op->blobs[out],
                absl::StrCat(OpLabel(*op), " output '", out, "'"));
      op->output_signature[out] = sig;
    }
  }

  // An input's signature: as stated; else as the op_type's rule wants it,
  // given the stated ones and the producers' layouts; else as its producer
  // lays it out (split(0) from other devices), every input like the first.
  void ResolveInputs(Op* op) {
    const OpConf& conf = *op->conf;
    auto stated = [&](size_t i) {
      return static_cast<int>(i) < conf.input_signature_size() &&
             conf.input_signature(i).kind_case() !=
                 ParallelSignature::KIND_NOT_SET;
    };
    std::vector<Signature> natural(op->inputs.size());
    std::map<std::string, Signature> given;
    for (size_t i = 0; i < op->inputs.size(); ++i) {
      const Input& in = op->inputs[i];
      const Op& producer = ops_[in.producer];
      if (stated(i)) {
        natural[i] = Signature::FromProto(conf.input_signature(i));
      } else if (SameDevices(producer, *op)) {
        natural[i] = producer.output_signature.at(in.output);
      } else {
        natural[i] = Signature::Split(0);
      }
      given.emplace(in.key, natural[i]);
    }
    std::optional<OpSignatures> rule;
    if (op->parallel() > 1) rule = InferSignatures(conf, given);
    // A rule that wants a stated input laid out otherwise does not apply:
    // its outputs would describe what the devices do not make.
    for (size_t i = 0; rule && i < op->inputs.size(); ++i) {
      auto want = rule->inputs.find(op->inputs[i].key);
      if (stated(i) && want != rule->inputs.end() &&
          want->second != natural[i]) {
        rule.reset();
      }
    }
    if (rule) op->inferred_outputs = rule->outputs;
    for (size_t i = 0; i < op->inputs.size(); ++i) {
      Input& in = op->inputs[i];
      const Signature* inferred = nullptr;
      if (rule && rule->inputs.count(in.key)) {
        inferred = &rule->inputs.at(in.key);
      }
      if (stated(i) || (i == 0 && !inferred)) {
        in.signature = natural[i];
      } else if (inferred) {
        in.signature = *inferred;
      } else {
        // Element-wise operators need every input laid out alike.
        in.signature = op->inputs[0].signature;
      }
      if (op->parallel() == 1) in.signature = Signature::Whole();
      CheckAxis(in.signature, ops_[in.producer].blobs.at(in.output),
                InputLabel(*op, static_cast<int>(i)));
    }
  }

  void CheckAxis(const Signature& sig, const std::vector<BlobDesc>& blobs,
                 const std::string& where) {
    if (sig.kind != Signature::kSplit) return;
    for (const BlobDesc& blob : blobs) {
      if (sig.axis < 0 || sig.axis >= static_cast<int>(blob.shape.size())) {
        Problem(absl::StrCat(where, ": ", sig.ToString(), " but blob '",
                             blob.name, "' is ", blob.ToString()));
        return;
      }
    }
  }

  static bool SameDevices(const Op& a, const Op& b) {
    return a.devices == b.devices;
  }

  TaskProto* AddTask(const std::string& name, const std::string& op_type,
                     const Device& device, int stage, TaskKind kind) {
    StreamKeyProto stream;
    stream.set_machine_id(device.machine);
    stream.set_device_type(device.type);
    stream.set_device_index(device.index);
    TaskProto* task =
        writer_.AddTask(UniqueName(name, &names_), op_type, stream);
    info_.push_back({device, stage, kind});
    return task;
  }

  int64_t AddOutput(TaskProto* task, const std::string& key,
                    std::vector<BlobDescProto> blobs = {}) {
    const TaskInfo& info = info_[task->task_id() - 1];
    const bool on_device = info.device.type == DeviceKinds::GPU &&
                           task->kernel().op_type() != "d2h";
    const int64_t id =
        writer_.AddOutput(task, key, 2, on_device, std::move(blobs));
    if (on_device) {
      writer_.Desc(id).mutable_mem_case()->set_device_index(info.device.index);
    }
    return id;
  }

  // One task per operator per device, with its outputs.
  void MakeOpTasks() {
    for (Op& op : ops_) {
      const int n = op.parallel();
      // Outputs all split along one axis: each task is told its part, so
      // a source that reads data makes only its rows, and a variable starts
      // from its window (actor/parallel_part.h).
      int axis = -1;
      bool split = n > 1 && !op.outputs.empty();
      for (const auto& [out, sig] : op.output_signature) {
        split = split && sig.kind == Signature::kSplit &&
                (axis < 0 || sig.axis == axis);
        axis = sig.axis;
      }
      for (int j = 0; j < n; ++j) {
        const std::string name =
            n == 1 ? op.name() : absl::StrCat(op.name(), "/", j);
        TaskProto* task = AddTask(name, op.conf->op_type(), op.devices[j],
                                  op.conf->stage(), TaskKind::kOp);
        auto& attrs = *task->mutable_kernel()->mutable_attr();
        attrs = op.conf->attr();
        if (split) {
          attrs["parallel_index"] = IntAttr(j);
          attrs["parallel_num"] = IntAttr(n);
          attrs["parallel_axis"] = IntAttr(axis);
        }
        op.tasks.push_back(task);
        for (const std::string& out : op.outputs) {
          std::vector<BlobDescProto> blobs;
          if (out == "out") blobs = SlicedBlobs(op, j);
          const int64_t id = AddOutput(task, out, std::move(blobs));
          if (auto it = op.conf->register_num().find(out);
              it != op.conf->register_num().end()) {
            stated_register_num_[id] = it->second;
          }
          if (op.conf->initial()) {
            writer_.Desc(id).set_initial_register(true);
            writer_.Desc(id).set_register_num(1);
          }
          op.registers[out].push_back(id);
        }
      }
    }
  }

  // A source's stated blobs, as device j of a split holds them.
  std::vector<BlobDescProto> SlicedBlobs(const Op& op, int j) {
    std::vector<BlobDescProto> blobs = StatedBlobs(*op.conf);
    const Signature& sig = op.output_signature.at("out");
    if (sig.kind != Signature::kSplit || op.parallel() == 1) return blobs;
    for (BlobDescProto& blob : blobs) {
      const int64_t size = blob.shape(sig.axis);
      blob.set_shape(sig.axis,
                     BalancedSplitter(size, op.parallel()).At(j).size());
    }
    return blobs;
  }

  // Every input of every operator: direct, through copies, or through
  // boxing when placements or signatures differ.
  void Wire() {
    for (Op& op : ops_) {
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        WireInput(&op, static_cast<int>(i));
      }
    }
  }

  void WireInput(Op* op, int i) {
    const Input& in = op->inputs[i];
    const Op& producer = ops_[in.producer];
    const std::vector<int64_t>& registers = producer.registers.at(in.output);
    const Signature from = producer.output_signature.at(in.output);
    const Signature to = in.signature;
    const std::string why = InputLabel(*op, i);
    const int n = op->parallel();
    const int stage = op->conf->stage();
    // Same layout on both sides: device j reads part j, copied if needed.
    // Partial sums need not stay on the producer's devices: moved, the
    // parts still add up to the whole.
    if (from == to && producer.parallel() == n) {
      for (int j = 0; j < n; ++j) {
        Consume(op->tasks[j], in.key,
                Route(registers[j], producer.devices[j], op->devices[j], stage,
                      why));
      }
      return;
    }
    if (to.kind == Signature::kPartialSum) {
      Problem(absl::StrCat(why, ": reads partial_sum, but its producer's ",
                           from.ToString(), " over ", producer.parallel(),
                           " devices cannot become partial sums over ", n,
                           " (only partial sums over as many devices are read "
                           "as partial sums, part j by device j)"));
      return;
    }
    if (from.kind == Signature::kBroadcast &&
        to.kind == Signature::kBroadcast) {
      for (int j = 0; j < n; ++j) {
        const int k = Nearest(producer.devices, op->devices[j]);
        Consume(op->tasks[j], in.key,
                Route(registers[k], producer.devices[k], op->devices[j], stage,
                      why));
      }
      return;
    }
    // The whole tensor, on the host of the consumer's first machine; partial
    // sums made in a GPU's memory and read there (its towers) are added on
    // that GPU.
    Device gather = op->devices[0].host();
    if (from.kind == Signature::kPartialSum &&
        op->devices[0].type == DeviceKinds::GPU &&
        std::all_of(producer.devices.begin(), producer.devices.end(),
                    [&](const Device& d) {
                      return d.shares_memory_with(op->devices[0]);
                    })) {
      gather = op->devices[0];
    }
    const int64_t whole = Gather(producer, in.output, gather, stage, why);
    for (int j = 0; j < n; ++j) {
      const Device& device = op->devices[j];
      int64_t part = whole;
      Device at = gather;
      // A reader of the whole sum on another machine makes it there from
      // the reducers' sums (Gather) or, over two machines, from the parts.
      // (A split reader takes its slice of the gathered sum, which crosses
      // alone.)
      if (from.kind == Signature::kPartialSum &&
          to.kind == Signature::kBroadcast &&
          device.machine != gather.machine &&
          (scattered_.count(registers[0]) != 0 ||
           AddsOnEachMachine(producer, gather, device))) {
        at = device.host();
        part = Gather(producer, in.output, at, stage, why);
      }
      if (to.kind == Signature::kSplit) {
        // Cut where the whole is made when that is another machine's CPU:
        // then only the slice crosses to the reader.
        const Device host = device.host();
        const Device made = info_[TaskOf(part)->task_id() - 1].device;
        const Device cut =
            made.type == DeviceKinds::CPU && made.machine != host.machine
                ? made
                : host;
        part = Slice(Route(part, at, cut, stage, why), to.axis, n, j, cut,
                     stage, why, producer.name());
        at = cut;
      }
      Consume(op->tasks[j], in.key, Route(part, at, device, stage, why));
    }
  }

  // Whether `reader`'s machine adds the partial sums itself rather than
  // receive them added on `gather`'s: where the parts lie on those two
  // machines, some on the reader's (PARTIAL_SUM_AUTO). Then each machine's
  // parts cross once, both ways at the same time, where the gather's sum
  // waited for the reader's parts and crossed back after them: one
  // transfer on the way to the reader instead of two, the same bytes. Both
  // machines add in part order, so their sums are the gather's bits. Over
  // more machines each would receive every other machine's parts, so the
  // sum goes out from one.
  bool AddsOnEachMachine(const Op& producer, const Device& gather,
                         const Device& reader) const {
    if (job_.partial_sum_reduction() != Job::PARTIAL_SUM_AUTO ||
        reader.machine == gather.machine) {
      return false;
    }
    bool reader_holds_one = false;
    for (const Device& device : producer.devices) {
      if (device.machine == reader.machine) {
        reader_holds_one = true;
      } else if (device.machine != gather.machine) {
        return false;
      }
    }
    return reader_holds_one;
  }

  // The device of `devices` closest to `to`: the same, else the same
  // machine, else the first.
  static int Nearest(const std::vector<Device>& devices, const Device& to) {
    for (size_t k = 0; k < devices.size(); ++k) {
      if (devices[k] == to) return static_cast<int>(k);
    }
    for (size_t k = 0; k < devices.size(); ++k) {
      if (devices[k].machine == to.machine) return static_cast<int>(k);
    }
    return 0;
  }

  // The producer's output as one tensor on `at` (a host, or a GPU whose
  // towers made partial sums): itself from one device or a broadcast,
  // concat of a split, add of partial sums.
  int64_t Gather(const Op& producer, const std::string& output,
                 const Device& at, int stage, const std::string& why) {
    const std::vector<int64_t>& registers = producer.registers.at(output);
    const Signature sig = producer.output_signature.at(output);
    if (producer.parallel() == 1 || sig.kind == Signature::kBroadcast) {
      const int k = Nearest(producer.devices, at);
      return Route(registers[k], producer.devices[k], at, stage, why);
    }
    const auto key = std::make_pair(registers[0], at);
    if (auto it = boxed_.find(key); it != boxed_.end()) return it->second;
    const bool split = sig.kind == Signature::kSplit;
    if (!split) {
      // Sums a reduce-scatter made for another host: concatenated here
      // too, so only the sums cross.
      if (auto it = scattered_.find(registers[0]); it != scattered_.end()) {
        return boxed_[key] = SumsConcatenated(producer, output, it->second, at,
                                              stage, why);
      }
      if (Scatters(producer, output, at, why)) {
        return boxed_[key] = ScatteredSum(producer, output, at, stage, why);
      }
    }
    const std::string name =
        absl::StrCat(producer.name(), ".", output, ":",
                     split ? "concat" : "add", "@", at.ToString());
    TaskProto* task =
        AddTask(name, split ? "concat" : "add", at, stage, TaskKind::kBoxing);
    if (split) {
      (*task->mutable_kernel()->mutable_attr())["axis"] = IntAttr(sig.axis);
    }
    for (int k = 0; k < producer.parallel(); ++k) {
      Consume(task, "in",
              Route(registers[k], producer.devices[k], at, stage, why));
    }
    Inserted(task, why, &report_.boxing);
    return boxed_[key] = AddOutput(task, "out");
  }

  // The machines that add a scattered reduction's slices: those holding
  // parts, but the reader's, in order of their first part.
  static std::vector<int> Reducers(const Op& producer, const Device& at) {
    std::vector<int> machines;
    for (const Device& device : producer.devices) {
      if (device.machine != at.machine &&
          std::find(machines.begin(), machines.end(), device.machine) ==
              machines.end()) {
        machines.push_back(device.machine);
      }
    }
    return machines;
  }

  // Why the producer's output cannot be scattered over `reducers`
  // machines along axis 0; empty: it can.
  static std::string Unscatterable(const Op& producer,
                                   const std::string& output, int reducers) {
    for (const BlobDesc& blob : producer.blobs.at(output)) {
      if (blob.is_dynamic || blob.shape.empty() || blob.shape[0] < reducers) {
        return absl::StrCat("blob '", blob.name, "' is ", blob.ToString(),
                            ", not static with a first axis of at least ",
                            reducers, " (the machines that add)");
      }
    }
    return "";
  }

  // Whether partial sums are added as ScatteredSum does: where asked, or
  // (PARTIAL_SUM_AUTO) where the parts lie on machines other than the
  // reader's, at least two, so the gather's one receiving link would
  // carry several registers per piece, and the blobs can be sliced.
  bool Scatters(const Op& producer, const std::string& output, const Device& at,
                const std::string& why) {
    const int reducers = static_cast<int>(Reducers(producer, at).size());
    const std::string unscatterable =
        Unscatterable(producer, output, std::max(reducers, 1));
    switch (job_.partial_sum_reduction()) {
      case Job::PARTIAL_SUM_GATHER:
        return false;
      case Job::PARTIAL_SUM_SCATTER:
        if (reducers == 0) return false;  // nothing crosses machines
        if (!unscatterable.empty()) {
          Problem(absl::StrCat(why,
                               ": partial_sum_reduction "
                               "PARTIAL_SUM_SCATTER, but ",
                               unscatterable));
        }
        return unscatterable.empty();
      default:
        return reducers >= 2 && unscatterable.empty();
    }
  }

  // Job::PARTIAL_SUM_SCATTER: a reduce-scatter, then a gather. Each part
  // is cut along axis 0 into one slice per reducing machine; reducer r
  // adds slice r of every part, in part order, and the reader's host
  // concatenates the sums. Every term meets the others in the gather's
  // order, so the bits are the gather's; every machine sends and receives
  // about one register per part it holds (the reader's receives one), per
  // piece, however many machines there are.
  int64_t ScatteredSum(const Op& producer, const std::string& output,
                       const Device& at, int stage, const std::string& why) {
    const std::vector<int64_t>& registers = producer.registers.at(output);
    const std::vector<int> reducers = Reducers(producer, at);
    const int slices = static_cast<int>(reducers.size());
    const std::string prefix = absl::StrCat(producer.name(), ".", output, ":");
    ScatteredSums& sums = scattered_[registers[0]];
    for (int r = 0; r < slices; ++r) {
      int first = 0;  // the reducer's first part
      while (producer.devices[first].machine != reducers[r]) ++first;
      const Device here = producer.devices[first].host();
      TaskProto* add = AddTask(
          absl::StrCat(prefix, "add", r, "of", slices, "@", here.ToString()),
          "add", here, stage, TaskKind::kBoxing);
      for (int k = 0; k < producer.parallel(); ++k) {
        const Device host = producer.devices[k].host();
        const int64_t whole =
            Route(registers[k], producer.devices[k], host, stage, why);
        const int64_t slice = Slice(whole, 0, slices, r, host, stage, why,
                                    TaskOf(registers[k])->name());
        Consume(add, "in", Route(slice, host, here, stage, why));
      }
      Inserted(add, why, &report_.boxing);
      sums.adds.push_back(AddOutput(add, "out"));
      sums.hosts.push_back(here);
    }
    return SumsConcatenated(producer, output, sums, at, stage, why);
  }

  // The sums ScatteredSum's reducers made of a producer's parts, each on
  // its reducer's host.
  struct ScatteredSums {
    std::vector<int64_t> adds;
    std::vector<Device> hosts;
  };

  // The whole of a scattered reduction on `at`: its reducers' sums,
  // concatenated there. Each host that reads the whole concatenates for
  // itself, so every reducer sends its sum to each of them, where
  // concatenated on one host and sent on, the whole would leave that
  // host's link once per other reader; the same sums, so the same bits.
  int64_t SumsConcatenated(const Op& producer, const std::string& output,
                           const ScatteredSums& sums, const Device& at,
                           int stage, const std::string& why) {
    TaskProto* concat = AddTask(
        absl::StrCat(producer.name(), ".", output, ":concat@", at.ToString()),
        "concat", at, stage, TaskKind::kBoxing);
    (*concat->mutable_kernel()->mutable_attr())["axis"] = IntAttr(0);
    for (size_t r = 0; r < sums.adds.size(); ++r) {
      Consume(concat, "in", Route(sums.adds[r], sums.hosts[r], at, stage, why));
    }
    Inserted(concat, why, &report_.boxing);
    return AddOutput(concat, "out");
  }

  int64_t Slice(int64_t whole, int axis, int parts, int index, const Device& at,
                int stage, const std::string& why,
                const std::string& producer) {
    const auto key = std::make_tuple(whole, at, axis, parts, index);
    if (auto it = sliced_.find(key); it != sliced_.end()) return it->second;
    TaskProto* task =
        AddTask(absl::StrCat(producer, ":slice(", axis, ")", index, "of", parts,
                             "@", at.ToString()),
                "slice", at, stage, TaskKind::kBoxing);
    auto& attrs = *task->mutable_kernel()->mutable_attr();
    attrs["axis"] = IntAttr(axis);
    attrs["parts"] = IntAttr(parts);
    attrs["index"] = IntAttr(index);
    Consume(task, "in", whole);
    Inserted(task, why, &report_.boxing);
    return sliced_[key] = AddOutput(task, "out");
  }

  // `reg`, made on `from`, readable on `to`: itself where they share
  // memory; else through d2h (off a GPU) and h2d (onto one). Registers
  // crossing machines travel in host memory: the runtime adds the
  // net_send and net_recv tasks when it partitions the plan.
  int64_t Route(int64_t reg, const Device& from, const Device& to_tower,
                int stage, const std::string& why) {
    if (from.shares_memory_with(to_tower)) return reg;
    // One copy per device serves all its towers.
    const Device to = to_tower.physical();
    const auto key = std::make_pair(reg, to);
    if (auto it = routed_.find(key); it != routed_.end()) return it->second;
    int64_t id = reg;
    const std::string source = TaskOf(reg)->name();
    if (from.type == DeviceKinds::GPU) {
      const auto down = std::make_pair(reg, from.host());
      if (auto it = routed_.find(down); it != routed_.end()) {
        id = it->second;
      } else {
        TaskProto* task = AddTask(absl::StrCat(source, "@cpu"), "d2h",
                                  from.physical(), stage, TaskKind::kCopy);
        Consume(task, "in", reg);
        Inserted(task, why, &report_.copies);
        id = routed_[down] = AddOutput(task, "out");
      }
    }
    if (to.type == DeviceKinds::GPU) {
      TaskProto* task = AddTask(absl::StrCat(source, "@", to.ToString()), "h2d",
                                to, stage, TaskKind::kCopy);
      Consume(task, "in", id);
      Inserted(task, why, &report_.copies);
      id = AddOutput(task, "out");
    }
    return routed_[key] = id;
  }

  TaskProto* TaskOf(int64_t reg) {
    return writer_.plan().mutable_task(
        static_cast<int>(writer_.Desc(reg).producer_task_id() - 1));
  }

  // `task` reads `reg` under `key`; through a copy when it reads it
  // already (AgainName).
  void Consume(TaskProto* task, const std::string& key, int64_t reg) {
    for (const auto& [name, list] : task->consumed_regst_desc_id()) {
      for (int64_t id : list.regst_desc_id()) {
        if (id != reg) continue;
        const TaskInfo info = info_[task->task_id() - 1];
        TaskProto* copy =
            AddTask(AgainName(TaskOf(reg)->name(), task->name()), "identity",
                    info.device, info.stage, TaskKind::kBoxing);
        writer_.Consume(copy, "in", reg);
        Inserted(copy, absl::StrCat("task '", task->name(), "'"),
                 &report_.boxing);
        writer_.Consume(task, key, AddOutput(copy, "out"));
        return;
      }
    }
    writer_.Consume(task, key, reg);
  }

  void Inserted(const TaskProto* task, const std::string& why, int* count) {
    ++*count;
    report_.inserted.push_back(absl::StrCat(task->kernel().op_type(), " '",
                                            task->name(), "' for ", why));
  }

  // By default (streams_per_device 0) each device runs each of its stages
  // on one stream, as OneFlow gives a device one compute stream: data
  // parallelism comes from devices, pipelining from stages, and a thread per
  // chain would only oversubscribe the cores. With streams_per_device N,
  // chains (a task whose one input comes from a task that feeds only it, on
  // the same device and stage) share their predecessor's stream, so their
  // messages stay on one thread, and are dealt round-robin to N streams.
  // Copies have their own streams after a device's compute ones: h2d, then
  // d2h.
  void AssignStreams() {
    Plan& plan = writer_.plan();
    const int n = plan.task_size();
    const int per_device = job_.streams_per_device();
    std::map<Device, std::map<int, int>> stage_stream;  // tower, stage
    for (int t = 0; t < n; ++t) {
      if (info_[t].kind != TaskKind::kCopy) {
        stage_stream[info_[t].device].emplace(info_[t].stage, 0);
      }
    }
    // A device's towers number their compute streams one after another
    // (the map holds a device's towers in order); its copies come after.
    std::map<Device, int> first_stream;     // per tower
    std::map<Device, int> compute_streams;  // per device
    for (auto& [tower, stages] : stage_stream) {
      int& next = compute_streams[tower.physical()];
      first_stream[tower] = next;
      int own = 0;
      for (auto& [stage, stream] : stages) stream = next + own++;
      next += per_device > 0 ? per_device : own;
    }
    std::map<int64_t, int> consumers;  // regst -> consumer count
    for (const TaskProto& task : plan.task()) {
      for (const auto& [key, list] : task.produced_regst_desc()) {
        consumers[list.regst_desc_id()] = list.consumer_task_id_size();
      }
    }
    std::map<Device, int> next_stream;
    std::set<std::pair<Device, int>> streams;
    for (int t = 0; t < n; ++t) {
      TaskProto* task = plan.mutable_task(t);
      const TaskInfo& info = info_[t];
      int stream = -1;
      if (info.kind == TaskKind::kCopy) {
        stream = compute_streams[info.device.physical()] +
                 (task->kernel().op_type() == "d2h" ? 1 : 0);
      } else if (per_device == 0) {
        stream = stage_stream[info.device].at(info.stage);
      } else if (const int pred = ChainPredecessor(t, consumers); pred >= 0) {
        stream = plan.task(pred).stream().stream_index();
      } else {
        stream =
            first_stream[info.device] + next_stream[info.device]++ % per_device;
      }
      task->mutable_stream()->set_stream_index(stream);
      streams.insert({info.device.physical(), stream});
    }
    report_.streams = static_cast<int>(streams.size());
  }

  // The task t continues, or -1. Tasks are made producers first except
  // across cycles, so a predecessor has its stream already when it comes
  // earlier; a later one starts a chain of its own.
  int ChainPredecessor(int t, const std::map<int64_t, int>& consumers) {
    const TaskProto& task = writer_.plan().task(t);
    int64_t only = -1, count = 0;
    for (const auto& [key, list] : task.consumed_regst_desc_id()) {
      for (int64_t id : list.regst_desc_id()) {
        only = id;
        ++count;
      }
    }
    if (count != 1 || consumers.at(only) != 1) return -1;
    const int pred = static_cast<int>(only / 100) - 1;  // PlanWriter's ids
    if (pred >= t) return -1;
    const TaskProto& producer = writer_.plan().task(pred);
    if (producer.produced_regst_desc_size() != 1) return -1;
    const TaskInfo& a = info_[pred];
    const TaskInfo& b = info_[t];
    if (a.kind == TaskKind::kCopy || !(a.device == b.device) ||
        a.stage != b.stage) {
      return -1;
    }
    for (const auto& [key, desc] : task.produced_regst_desc()) {
      if (desc.initial_register()) return -1;
    }
    return pred;
  }

  // A register read k stages after its producer's gets k + 1 buffers (at
  // least the default 2); initial registers keep 1.
  void SizeRegisters() {
    Plan& plan = writer_.plan();
    for (TaskProto& task : *plan.mutable_task()) {
      const int stage = info_[task.task_id() - 1].stage;
      for (auto& [key, desc] : *task.mutable_produced_regst_desc()) {
        if (desc.initial_register()) continue;
        int deepest = 0;
        for (int64_t c : desc.consumer_task_id()) {
          deepest = std::max(deepest, info_[c - 1].stage - stage);
        }
        desc.set_register_num(std::max(2, deepest + 1));
      }
    }
    if (options_.share_memory) {
      lifetimes_.emplace(plan);
      report_.single_buffer_registers =
          SingleBufferInWindows(*lifetimes_, &plan);
    }
    for (TaskProto& task : *plan.mutable_task()) {
      for (auto& [key, desc] : *task.mutable_produced_regst_desc()) {
        auto it = stated_register_num_.find(desc.regst_desc_id());
        if (it != stated_register_num_.end()) {
          desc.set_register_num(it->second);
        }
      }
    }
  }

  // Shapes of every physical register; then, over budget, the largest
  // registers lose buffers (down to 1) until the plan fits.
  absl::Status FitBudget() {
    CompileOptions compile;
    compile.bindings = options_.bindings;
    // Devices were checked against options_.probe where ops were placed.
    compile.probe = [](int) { return absl::OkStatus(); };
    compile.multi_machine = true;
    compile.max_register_bytes = INT64_MAX / 4;
    absl::StatusOr<std::unique_ptr<CompiledPlan>> compiled =
        CompilePlan(writer_.plan(), compile);
    if (!compiled.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job: the compiled plan is invalid (a compiler bug, or a kernel "
          "that accepts the whole tensor but not its parts):\n",
          compiled.status().message()));
    }
    std::vector<std::pair<int64_t, RegisterDescProto*>> registers;
    std::map<int64_t, int64_t> bytes_by_id;
    int64_t total = 0;
    for (TaskProto& task : *writer_.plan().mutable_task()) {
      const TaskProto& inferred = (*compiled)->plan.task(task.task_id() - 1);
      for (auto& [key, desc] : *task.mutable_produced_regst_desc()) {
        // The plan states every register's blobs: a process of a
        // multi-machine job mirrors registers from what the plan says.
        if (desc.blob().empty()) {
          *desc.mutable_blob() = inferred.produced_regst_desc().at(key).blob();
        }
        // As the runtime counts them (CheckRegisterBytes).
        const int64_t bytes =
            RegisterBufferBytes((*compiled)->blobs.at(desc.regst_desc_id()));
        registers.push_back({bytes, &desc});
        bytes_by_id[desc.regst_desc_id()] = bytes;
        total += bytes * desc.register_num();
      }
    }
    // Shared blocks hold registers of one buffer, which the cuts below
    // never touch (they stop at 1).
    if (lifetimes_.has_value()) {
      const MemorySharing shared =
          ShareMemory(*lifetimes_, bytes_by_id, &writer_.plan());
      report_.shared_blocks = shared.blocks;
      report_.shared_registers = shared.registers;
      report_.bytes_saved = shared.bytes_saved;
      total -= shared.bytes_saved;
    }
    const int64_t budget = job_.memory_budget_bytes() > 0
                               ? job_.memory_budget_bytes()
                               : kDefaultMaxRegisterBytes;
    std::stable_sort(
        registers.begin(), registers.end(),
        [](const auto& a, const auto& b) { return a.first > b.first; });
    for (int floor : {2, 1}) {
      for (auto& [bytes, desc] : registers) {
        if (total <= budget) break;
        // A stated register_num is the op's to choose, not the budget's.
        if (stated_register_num_.count(desc->regst_desc_id())) continue;
        const int cut = std::max(0, desc->register_num() - floor);
        const int64_t over = total - budget;
        const int take = static_cast<int>(
            std::min<int64_t>(cut, (over + bytes - 1) / bytes));
        desc->set_register_num(desc->register_num() - take);
        total -= int64_t{take} * bytes;
      }
    }
    report_.register_bytes = total;
    if (total > budget) {
      return absl::InvalidArgumentError(absl::StrCat(
          "job: the registers need ", total, " bytes at one buffer each; ",
          "memory_budget_bytes is ", budget));
    }
    return absl::OkStatus();
  }

  const Job& job_;
  const JobCompileOptions& options_;
  std::vector<std::string> problems_;
  std::vector<Op> ops_;
  std::map<std::string, int> by_name_;
  std::vector<int> order_;
  PlanWriter writer_;
  std::vector<TaskInfo> info_;   // per task, by task_id - 1
  std::set<std::string> names_;  // of the plan's tasks
  std::map<std::pair<int64_t, Device>, int64_t> routed_;
  // Gathers by (first part, host); slices by (whole, host, axis, parts,
  // index): each made once, however many consumers read it.
  std::map<std::pair<int64_t, Device>, int64_t> boxed_;
  std::map<std::tuple<int64_t, Device, int, int, int>, int64_t> sliced_;
  // ScatteredSum's sums, by the producer's first part.
  std::map<int64_t, ScatteredSums> scattered_;
  // Registers of ops that state their register_num, by id.
  std::map<int64_t, int> stated_register_num_;
  JobCompileReport report_;
  // Made once registers are sized (share_memory only).
  std::optional<RegisterLifetimes> lifetimes_;
};

}  // namespace
}  // namespace actorflow::internal

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

absl::StatusOr<CompiledJob> CompileJob(const Job& job,
                                       const JobCompileOptions& options) {
  return internal::Compiler(job, options).Compile();
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
