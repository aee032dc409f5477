#include "actorflow/plan_validator.h"

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "actor/act_context.h"
#include "actor/blob_desc_proto.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/cuda_api.h"
#include "actorflow/kernel.h"
#include "actorflow/kernel_bindings.h"
#include "plan/cycles.h"
#include "plan/plan_util.h"
#include "plan/register_lifetimes.h"
#include "plan/validate_and_bind.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

using ::actorflow::internal::RegisterLifetimes;

using ::actorflow::internal::BlobDescsFromProto;
using ::actorflow::internal::CyclesAmongUnordered;
using ::actorflow::internal::IsDeviceToHost;
using ::actorflow::internal::IsHostToDevice;
using ::actorflow::internal::MakeInitContext;
using ::actorflow::internal::SortedInputs;
using ::actorflow::internal::SortedOutputs;
using ::actorflow::internal::TaskLabel;
using ::actorflow::internal::ToDeviceKind;
namespace {

std::string MemoryName(const MemoryCase& mem) {
  return mem.device_type() == DeviceKinds::GPU
             ? absl::StrCat("GPU memory of device ", mem.device_index())
             : std::string("host memory");
}

struct Producer {
  int task = 0;  // index into plan.task()
  std::string name;
  const RegisterDescProto* desc = nullptr;
};

// Checks a plan and, on the way, compiles it: kernels are created and
// Init'ed in topological order, so each sees its inputs' blobs.
class Validator {
 public:
  Validator(const Plan& plan, DeviceProbe probe, const KernelBindings& bindings)
      : plan_(plan), probe_(std::move(probe)), bindings_(bindings) {}

  // `compiled` (may be null) receives the kernels and blobs; they are
  // complete only when no problem is returned.
  std::vector<std::string> Run(CompiledPlan* compiled) {
    compiled_ = compiled;
    if (plan_.task_size() == 0) {
      Problem("plan: has no task");
      return problems_;
    }
    if (plan_.total_piece_num() < 0) {
      Problem(absl::StrCat("plan.total_piece_num: must be >= 0, got ",
                           plan_.total_piece_num()));
    }
    CheckTaskIds();
    for (int t = 0; t < plan_.task_size(); ++t) CheckStream(t);
    for (int t = 0; t < plan_.task_size(); ++t) CollectProduced(t);
    for (int t = 0; t < plan_.task_size(); ++t) CheckConsumed(t);
    CheckConsumerLists();
    for (int t = 0; t < plan_.task_size(); ++t) CheckPlacement(t);
    for (int t = 0; t < plan_.task_size(); ++t) CheckInitialRegisters(t);
    CheckCycles();
    if (problems_.empty()) CheckReachedBySources();
    if (problems_.empty()) CheckMemBlocks();
    CheckObjectBindings();
    for (int t : topological_order_) CheckKernel(t);
    return problems_;
  }

  // Accept any machine_id >= 0 (a whole multi-machine plan, before it is
  // split per process).
  void set_multi_machine(bool multi_machine) { multi_machine_ = multi_machine; }

  const std::map<int64_t, std::vector<BlobDesc>>& resolved_blobs() const {
    return resolved_;
  }

 private:
  const TaskProto& task(int t) const { return plan_.task(t); }
  std::string Label(int t) const { return TaskLabel(task(t)); }
  void Problem(std::string message) { problems_.push_back(std::move(message)); }

  // Why this build and machine cannot serve GPU work on `device_index`;
  // empty when they can.
  std::string GpuProblem(int device_index) const {
    absl::Status available = probe_(device_index);
    if (available.ok()) return "";
    if (!cuda::BuiltWithCuda()) {
      return "this build has no CUDA support (no CUDA toolkit was found when "
             "it was built)";
    }
    return absl::StrCat("this machine cannot serve it: ", available.message());
  }

  void CheckTaskIds() {
    std::map<int64_t, int> ids;
    std::map<std::string, int> names;
    for (int t = 0; t < plan_.task_size(); ++t) {
      auto [id_it, id_new] = ids.emplace(task(t).task_id(), t);
      if (!id_new) {
        Problem(absl::StrCat(Label(t), ": task_id: duplicate, also used by ",
                             Label(id_it->second)));
      } else {
        index_of_task_id_[task(t).task_id()] = t;
      }
      if (task(t).name().empty()) {
        Problem(absl::StrCat(Label(t), ": name: must not be empty"));
        continue;
      }
      auto [name_it, name_new] = names.emplace(task(t).name(), t);
      if (!name_new) {
        Problem(absl::StrCat(Label(t), ": name: duplicate, also used by ",
                             Label(name_it->second)));
      }
    }
  }

  void CheckStream(int t) {
    const StreamKeyProto& stream = task(t).stream();
    if (multi_machine_ && stream.machine_id() < 0) {
      Problem(absl::StrCat(Label(t), ": stream.machine_id: must be >= 0, got ",
                           stream.machine_id()));
    } else if (!multi_machine_ && stream.machine_id() != 0) {
      Problem(absl::StrCat(
          Label(t),
          ": stream.machine_id: must be 0 in one process (a plan over "
          "machines 0..N-1 runs as N processes: actorflow launch --nproc=N, "
          "or actorflow run with WORLD_SIZE and RANK), got ",
          stream.machine_id()));
    }
    if (stream.device_index() < 0 || stream.stream_index() < 0) {
      Problem(absl::StrCat(
          Label(t), ": stream: device_index and stream_index must be >= 0"));
    }
    if (stream.device_type() == DeviceKinds::GPU) {
      std::string problem = GpuProblem(stream.device_index());
      if (!problem.empty()) {
        gpu_unusable_.insert(t);
        Problem(absl::StrCat(Label(t), ": stream.device_type GPU (device ",
                             stream.device_index(), "): ", problem));
      }
      if (stream.host_async()) {
        Problem(absl::StrCat(Label(t),
                             ": stream.host_async: applies to CPU streams "
                             "only (a GPU stream is asynchronous already)"));
      }
    }
  }

  void CollectProduced(int t) {
    for (const auto& [name, desc] : SortedOutputs(task(t))) {
      // Structured bindings are captured through init-captures (clang
      // before 16 refuses them otherwise).
      auto where = [this, t, &out = name, out_desc = desc] {
        return absl::StrCat(Label(t), ": produced_regst_desc['", out,
                            "'] (regst_desc ", out_desc->regst_desc_id(), ")");
      };
      auto [it, fresh] =
          producers_.emplace(desc->regst_desc_id(), Producer{t, name, desc});
      if (!fresh) {
        Problem(absl::StrCat(where(),
                             ": regst_desc_id: duplicate, also "
                             "produced by ",
                             Label(it->second.task), " as '", it->second.name,
                             "'"));
        continue;
      }
      if (desc->producer_task_id() != task(t).task_id()) {
        Problem(absl::StrCat(where(), ".producer_task_id: is ",
                             desc->producer_task_id(), ", but ", Label(t),
                             " produces it"));
      }
      if (desc->register_num() < 1) {
        Problem(absl::StrCat(where(), ".register_num: must be >= 1, got ",
                             desc->register_num()));
      }
      if (desc->elem_cnt() < 0) {
        Problem(absl::StrCat(where(), ".elem_cnt: must be >= 0, got ",
                             desc->elem_cnt()));
      }
      absl::StatusOr<std::vector<BlobDesc>> blobs = BlobDescsFromProto(*desc);
      if (!blobs.ok()) {
        Problem(absl::StrCat(where(), ".", blobs.status().message()));
        unknown_blobs_.insert(desc->regst_desc_id());
      } else if (!blobs->empty()) {
        int64_t total = 0;
        for (const BlobDesc& blob : *blobs) total += blob.elem_cnt();
        if (desc->elem_cnt() > 0 && desc->elem_cnt() != total) {
          Problem(absl::StrCat(where(), ".elem_cnt: is ", desc->elem_cnt(),
                               ", but its blobs hold ", total,
                               " elements (state one or the other)"));
        }
        declared_[desc->regst_desc_id()] = std::move(*blobs);
      } else if (desc->elem_cnt() > 0) {
        declared_[desc->regst_desc_id()] = {LegacyBlob(desc->elem_cnt())};
        legacy_.insert(desc->regst_desc_id());
      }
      const MemoryCase& mem = desc->mem_case();
      if (mem.device_type() == DeviceKinds::GPU) {
        std::string problem = GpuProblem(mem.device_index());
        if (!problem.empty()) {
          Problem(absl::StrCat(where(), ".mem_case.device_type GPU (device ",
                               mem.device_index(), "): ", problem));
        }
      } else if (mem.pinned()) {
        absl::Status pinnable = probe_(0);
        if (!pinnable.ok()) {
          Problem(absl::StrCat(where(),
                               ".mem_case.pinned: pinned host memory needs a "
                               "usable CUDA device: ",
                               pinnable.message()));
        }
      }
    }
  }

  void CheckConsumed(int t) {
    std::set<int64_t> seen;
    for (const auto& [name, ids] : SortedInputs(task(t))) {
      auto where = [this, t, &input = name] {
        return absl::StrCat(Label(t), ": consumed_regst_desc_id['", input,
                            "']");
      };
      if (ids.empty()) Problem(absl::StrCat(where(), ": empty id list"));
      for (int64_t id : ids) {
        if (!seen.insert(id).second) {
          Problem(absl::StrCat(where(), ": regst_desc ", id,
                               " is consumed twice by this task"));
          unresolved_.insert(t);
          continue;
        }
        auto it = producers_.find(id);
        if (it == producers_.end()) {
          Problem(absl::StrCat(where(), ": regst_desc ", id,
                               " is produced by no task"));
          unresolved_.insert(t);
          continue;
        }
        consumers_of_[id].insert(task(t).task_id());
        // An initial register is there before its producer acts: reading it
        // waits on nothing, so it closes no cycle.
        if (!it->second.desc->initial_register()) {
          edges_[it->second.task].insert(t);
        } else {
          initial_edges_[it->second.task].insert(t);
        }
      }
    }
  }

  void CheckConsumerLists() {
    for (const auto& [id, producer] : producers_) {
      auto where = [this, desc_id = id, &from = producer] {
        return absl::StrCat(Label(from.task), ": produced_regst_desc['",
                            from.name, "'] (regst_desc ", desc_id,
                            ").consumer_task_id");
      };
      std::set<int64_t> listed;
      for (int64_t consumer : producer.desc->consumer_task_id()) {
        if (!listed.insert(consumer).second) {
          Problem(
              absl::StrCat(where(), ": lists task_id ", consumer, " twice"));
        }
      }
      const std::set<int64_t>& actual = consumers_of_[id];
      for (int64_t consumer : listed) {
        if (actual.count(consumer)) continue;
        auto task_it = index_of_task_id_.find(consumer);
        Problem(
            absl::StrCat(where(), ": lists task_id ", consumer,
                         task_it == index_of_task_id_.end()
                             ? ", which is no task of the plan"
                             : absl::StrCat(", but ", Label(task_it->second),
                                            " does not consume it")));
      }
      for (int64_t consumer : actual) {
        if (listed.count(consumer)) continue;
        Problem(absl::StrCat(where(), ": ",
                             Label(index_of_task_id_.at(consumer)),
                             " consumes it but is not listed"));
      }
    }
  }

  // Kernels touch only memory their stream's device can address: host
  // memory on CPU streams; on a GPU stream, that device's memory, except
  // the host side of h2d (its input) and d2h (its output).
  void CheckPlacement(int t) {
    const StreamKeyProto& stream = task(t).stream();
    const bool gpu = stream.device_type() == DeviceKinds::GPU;
    auto expected = [&](bool host_side) {
      MemoryCase mem;
      if (gpu && !host_side) {
        mem.set_device_type(DeviceKinds::GPU);
        mem.set_device_index(stream.device_index());
      }
      return mem;
    };
    auto same_place = [](const MemoryCase& a, const MemoryCase& b) {
      return a.device_type() == b.device_type() &&
             (a.device_type() == DeviceKinds::CPU ||
              a.device_index() == b.device_index());
    };
    auto runs_on = [&] {
      return gpu ? absl::StrCat("GPU stream of device ", stream.device_index())
                 : std::string("CPU stream");
    };
    const char* hint =
        gpu ? "(h2d and d2h tasks move data between host and device)"
            : "(a d2h task on a GPU stream brings data to the host)";
    if (!unresolved_.count(t)) {
      MemoryCase want = expected(IsHostToDevice(task(t)));
      for (const auto& [name, ids] : SortedInputs(task(t))) {
        for (int64_t id : ids) {
          const MemoryCase& have = producers_.at(id).desc->mem_case();
          if (same_place(have, want)) continue;
          Problem(absl::StrCat(
              Label(t), ": consumed_regst_desc_id['", name, "']: regst_desc ",
              id, " is in ", MemoryName(have), ", but this task runs on a ",
              runs_on(), " and reads ", MemoryName(want), " ", hint));
        }
      }
    }
    MemoryCase want = expected(IsDeviceToHost(task(t)));
    for (const auto& [name, desc] : SortedOutputs(task(t))) {
      if (same_place(desc->mem_case(), want)) continue;
      Problem(absl::StrCat(Label(t), ": produced_regst_desc['", name,
                           "'] (regst_desc ", desc->regst_desc_id(),
                           ").mem_case: is ", MemoryName(desc->mem_case()),
                           ", but this task runs on a ", runs_on(),
                           " and writes ", MemoryName(want), " ", hint));
    }
  }

  // Initial registers (RegisterDescProto.initial_register): what the actor
  // supports, and blobs known before the producer's kernel is Init'ed (its
  // consumers come first in the topological order).
  void CheckInitialRegisters(int t) {
    const auto outputs = SortedOutputs(task(t));
    int initial = 0;
    for (const auto& [name, desc] : outputs)
      initial += desc->initial_register();
    if (initial == 0) return;
    const std::string& op_type = task(t).kernel().op_type();
    std::string problem;
    if (initial != static_cast<int>(outputs.size())) {
      problem =
          "either every produced register is initial or none is (the "
          "task's outputs are one piece ahead of its inputs)";
    } else if (task(t).consumed_regst_desc_id().empty()) {
      problem =
          "a task with an initial register must consume something (it "
          "makes piece p + 1 from its inputs' piece p)";
    } else if (op_type == "feed" || op_type == "fetch") {
      problem = absl::StrCat("a ", op_type, " task cannot have one");
    } else if (DeviceOf(t) == DeviceKind::kCpu &&
               task(t).stream().host_async()) {
      // A GPU kernel's InitialOutput waits for its own stream; a host-async
      // stream has no such wait.
      problem = "its producer must not run on a host-async CPU stream";
    }
    for (const auto& [name, desc] : outputs) {
      const int64_t id = desc->regst_desc_id();
      std::string where =
          absl::StrCat(Label(t), ": produced_regst_desc['", name,
                       "'] (regst_desc ", id, ").initial_register");
      if (!problem.empty()) {
        Problem(absl::StrCat(where, ": ", problem));
        unknown_blobs_.insert(id);
        continue;
      }
      if (unknown_blobs_.count(id)) continue;
      auto declared = declared_.find(id);
      if (declared == declared_.end() || legacy_.count(id)) {
        Problem(absl::StrCat(where,
                             ": state the register's blobs (`blob` entries): "
                             "its consumers are checked before its producer"));
        unknown_blobs_.insert(id);
        continue;
      }
      resolved_[id] = declared->second;
    }
  }

  DeviceKind DeviceOf(int t) const {
    return ToDeviceKind(task(t).stream().device_type());
  }

  // An object bound with BindObject serves one task only.
  void CheckObjectBindings() {
    std::map<std::string, int> first_user;
    for (int t = 0; t < plan_.task_size(); ++t) {
      const std::string& op_type = task(t).kernel().op_type();
      if (!bindings_.IsObject(op_type, DeviceOf(t))) continue;
      auto [it, fresh] = first_user.emplace(op_type, t);
      if (fresh) continue;
      Problem(absl::StrCat(Label(t), ": kernel.op_type: '", op_type,
                           "' is bound to one kernel object, already used by ",
                           Label(it->second)));
      failed_kernel_.insert(t);
    }
  }

  // Creates the task's kernel and runs its Init with its inputs' blobs;
  // then settles each output's blobs: what Init states must match what the
  // plan states; either one alone is taken; neither is a control token.
  // Tasks downstream of a failure are skipped, so one mistake is reported
  // once.
  void CheckKernel(int t) {
    const std::string& op_type = task(t).kernel().op_type();
    const DeviceKind device = DeviceOf(t);
    const DeviceKind other =
        device == DeviceKind::kGpu ? DeviceKind::kCpu : DeviceKind::kGpu;
    const std::vector<std::pair<std::string, const RegisterDescProto*>>
        outputs = SortedOutputs(task(t));
    auto give_up = [&] {
      for (const auto& [name, desc] : outputs) {
        unknown_blobs_.insert(desc->regst_desc_id());
      }
    };
    if (failed_kernel_.count(t)) return give_up();
    if (!bindings_.Has(op_type, device) && !bindings_.Has(op_type, other)) {
      give_up();
      // A build without CUDA has no GPU kernels (h2d, d2h) at all; the
      // GPU stream's problem already says why.
      if (gpu_unusable_.count(t) && !cuda::BuiltWithCuda()) return;
      Problem(absl::StrCat(
          Label(t), ": kernel.op_type: unknown op_type '", op_type,
          "' (known: ",
          absl::StrJoin(bindings_.op_types(DeviceKind::kCpu), ", "), ")"));
      return;
    }
    if (!bindings_.Has(op_type, device)) {
      give_up();
      // Already reported when the GPU itself is unusable here.
      if (gpu_unusable_.count(t)) return;
      Problem(absl::StrCat(
          Label(t), ": kernel.op_type: '", op_type, "' has no ",
          DeviceKindName(device), " kernel; it runs on ", DeviceKindName(other),
          " streams (", DeviceKindName(device),
          " kernels: ", absl::StrJoin(bindings_.op_types(device), ", "), ")"));
      return;
    }
    // A kernel's Init needs every input resolved and its blobs known.
    if (unresolved_.count(t)) return give_up();
    std::vector<KernelIo> inputs;
    for (const auto& [name, ids] : SortedInputs(task(t))) {
      for (int64_t id : ids) {
        if (unknown_blobs_.count(id)) return give_up();
        inputs.push_back({name, id, resolved_.at(id), true});
      }
    }
    std::vector<KernelIo> output_ios;
    for (const auto& [name, desc] : outputs) {
      auto declared = declared_.find(desc->regst_desc_id());
      output_ios.push_back({name, desc->regst_desc_id(),
                            declared == declared_.end()
                                ? std::vector<BlobDesc>()
                                : declared->second,
                            declared != declared_.end()});
    }
    auto kernel = bindings_.Create(op_type, device);
    if (!kernel.ok()) {
      give_up();
      Problem(absl::StrCat(Label(t), ": ", kernel.status().message()));
      return;
    }
    KernelInitContext ctx =
        MakeInitContext(task(t), std::move(inputs), output_ios);
    absl::Status status = (*kernel)->Init(ctx);
    if (!status.ok()) {
      give_up();
      Problem(absl::StrCat(Label(t), ": ", status.message()));
      return;
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      const int64_t id = outputs[o].second->regst_desc_id();
      if (unknown_blobs_.count(id)) continue;  // a bad blob entry
      const std::vector<BlobDesc>* inferred = ctx.inferred(o);
      auto where = [&] {
        return absl::StrCat(Label(t), ": produced_regst_desc['",
                            outputs[o].first, "'] (regst_desc ", id, ")");
      };
      if (inferred != nullptr && output_ios[o].declared) {
        std::string mismatch = legacy_.count(id)
                                   ? LegacyMismatch(*inferred, id)
                                   : Mismatch(output_ios[o].blobs, *inferred);
        if (!mismatch.empty()) {
          Problem(absl::StrCat(where(), ": ", mismatch));
          unknown_blobs_.insert(id);
          continue;
        }
      }
      resolved_[id] = inferred != nullptr ? *inferred : output_ios[o].blobs;
    }
    if (compiled_ != nullptr) compiled_->kernels[t] = std::move(*kernel);
  }

  // What the plan states against what Init inferred: "" when they agree.
  static std::string Mismatch(const std::vector<BlobDesc>& stated,
                              const std::vector<BlobDesc>& inferred) {
    if (stated.size() != inferred.size()) {
      std::vector<std::string> names;
      for (const BlobDesc& blob : inferred) names.push_back(blob.ToString());
      return absl::StrCat("the plan states ", stated.size(),
                          " blobs, but shape inference gives ", inferred.size(),
                          " (", absl::StrJoin(names, "; "), ")");
    }
    for (size_t b = 0; b < stated.size(); ++b) {
      const BlobDesc& s = stated[b];
      const BlobDesc& i = inferred[b];
      std::string blob = absl::StrCat("blob '", s.name, "'");
      if (s.name != i.name) {
        return absl::StrCat("blob[", b, "].name: the plan states '", s.name,
                            "', but shape inference gives '", i.name, "'");
      }
      if (s.data_type != i.data_type) {
        return absl::StrCat(
            blob, ".data_type: the plan states ", DataTypeName(s.data_type),
            ", but shape inference gives ", DataTypeName(i.data_type));
      }
      if (s.shape.size() != i.shape.size()) {
        return absl::StrCat(
            blob, ".shape: the plan states ", ShapeString(s.shape), " (rank ",
            s.shape.size(), "), but shape inference gives ",
            ShapeString(i.shape), " (rank ", i.shape.size(), ")");
      }
      for (size_t d = 0; d < s.shape.size(); ++d) {
        if (s.shape[d] != i.shape[d]) {
          return absl::StrCat(blob, ".shape: dimension ", d, " is ", s.shape[d],
                              " in the plan, but shape inference gives ",
                              i.shape[d], " (", ShapeString(i.shape), ")");
        }
      }
      if (s.is_dynamic != i.is_dynamic) {
        return absl::StrCat(blob, ".is_dynamic: the plan states ",
                            s.is_dynamic ? "true" : "false",
                            ", but shape inference gives ",
                            i.is_dynamic ? "true" : "false");
      }
    }
    return "";
  }

  // elem_cnt alone (the form from before blobs) states a size only: on an
  // output that inference describes, the blobs' element count must equal
  // it, and their types, shapes and dynamic-ness are inference's. So an old
  // plan gains a `cast` or `head` without restating its registers.
  std::string LegacyMismatch(const std::vector<BlobDesc>& inferred,
                             int64_t id) const {
    const int64_t elem_cnt = declared_.at(id)[0].elem_cnt();
    int64_t total = 0;
    std::vector<std::string> names;
    for (const BlobDesc& blob : inferred) {
      total += blob.elem_cnt();
      names.push_back(blob.ToString());
    }
    if (total == elem_cnt) return "";
    return absl::StrCat("elem_cnt: is ", elem_cnt,
                        ", but shape inference gives ", total, " elements (",
                        names.empty() ? "no blobs" : absl::StrJoin(names, "; "),
                        ")");
  }

  // Kahn's algorithm; whatever it cannot order lies on a cycle or behind
  // one (plan/cycles.h names the cycles, in edge direction).
  void CheckCycles() {
    int n = plan_.task_size();
    std::vector<int> in_degree(n, 0);
    std::vector<std::vector<int>> preds(n);
    for (const auto& [from, tos] : edges_) {
      for (int to : tos) {
        ++in_degree[to];
        preds[to].push_back(from);
      }
    }
    // Among the ready tasks, the first in plan order: kernels are Init'ed
    // (and problems reported) in an order that does not depend on maps.
    std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
    for (int t = 0; t < n; ++t) {
      if (in_degree[t] == 0) ready.push(t);
    }
    std::vector<bool> ordered(n, false);
    while (!ready.empty()) {
      int t = ready.top();
      ready.pop();
      ordered[t] = true;
      topological_order_.push_back(t);
      for (int to : edges_[t]) {
        if (--in_degree[to] == 0) ready.push(to);
      }
    }
    for (const std::vector<int>& cycle : CyclesAmongUnordered(preds, ordered)) {
      std::vector<std::string> names;
      for (int c : cycle)
        names.push_back(absl::StrCat("'", task(c).name(), "'"));
      names.push_back(names.front());
      Problem(absl::StrCat("plan: cycle: ", absl::StrJoin(names, " -> "),
                           " (each waits on the one before it; a cycle needs "
                           "an initial register on one of its edges)"));
    }
  }

  // Pieces start at tasks that consume nothing (sources, feeds) and end
  // when they stop. A task no such task reaches, over any edge, is on or
  // behind a cycle through an initial register that nothing outside
  // drives: it would act forever (or never), so the plan is refused.
  // Registers sharing memory (mem_block_id): each of one buffer, and no
  // two of a block ever hold data at once (RegisterLifetimes).
  void CheckMemBlocks() {
    std::map<int64_t, std::vector<std::pair<int, const RegisterDescProto*>>>
        blocks;
    for (int t = 0; t < plan_.task_size(); ++t) {
      for (const auto& [name, desc] : SortedOutputs(task(t))) {
        auto where = [this, t, &out = name, out_desc = desc] {
          return absl::StrCat(Label(t), ": produced_regst_desc['", out,
                              "'] (regst_desc ", out_desc->regst_desc_id(),
                              ").mem_block_id ", out_desc->mem_block_id());
        };
        if (desc->mem_block_id() < 0) {
          Problem(absl::StrCat(where(), ": must be >= 0"));
        } else if (desc->mem_block_id() > 0 && desc->register_num() != 1) {
          Problem(absl::StrCat(where(), ": register_num is ",
                               desc->register_num(),
                               "; only registers of one buffer share memory"));
        } else if (desc->mem_block_id() > 0) {
          blocks[desc->mem_block_id()].push_back({t, desc});
        }
      }
    }
    bool shared = false;
    for (const auto& [id, members] : blocks) shared |= members.size() > 1;
    if (!shared) return;
    const RegisterLifetimes lifetimes(plan_);
    for (const auto& [id, members] : blocks) {
      for (size_t i = 0; i < members.size(); ++i) {
        const auto& [t, desc] = members[i];
        const std::string where =
            absl::StrCat(Label(t), ": regst_desc ", desc->regst_desc_id(),
                         ".mem_block_id ", id);
        const std::string outside =
            lifetimes.WhyNotInWindow(desc->regst_desc_id());
        if (!outside.empty()) {
          Problem(absl::StrCat(where, ": cannot share memory: ", outside));
          continue;
        }
        for (size_t j = 0; j < i; ++j) {
          const auto& [u, other] = members[j];
          if (task(u).stream().machine_id() != task(t).stream().machine_id()) {
            Problem(absl::StrCat(where, ": shared with regst_desc ",
                                 other->regst_desc_id(), " of machine ",
                                 task(u).stream().machine_id(),
                                 "; a block lies on one machine"));
            continue;
          }
          const std::string overlap = lifetimes.WhyOverlap(
              other->regst_desc_id(), desc->regst_desc_id());
          if (!overlap.empty() && lifetimes.InWindow(other->regst_desc_id())) {
            Problem(absl::StrCat(where, ": ", overlap));
          }
        }
      }
    }
  }

  void CheckReachedBySources() {
    const int n = plan_.task_size();
    std::vector<bool> reached(n, false);
    std::vector<int> stack;
    for (int t = 0; t < n; ++t) {
      if (task(t).consumed_regst_desc_id().empty()) {
        reached[t] = true;
        stack.push_back(t);
      }
    }
    while (!stack.empty()) {
      const int t = stack.back();
      stack.pop_back();
      for (const auto* edges : {&edges_, &initial_edges_}) {
        auto it = edges->find(t);
        if (it == edges->end()) continue;
        for (int to : it->second) {
          if (!reached[to]) {
            reached[to] = true;
            stack.push_back(to);
          }
        }
      }
    }
    std::vector<std::string> names;
    for (int t = 0; t < n; ++t) {
      if (!reached[t]) names.push_back(absl::StrCat("'", task(t).name(), "'"));
    }
    if (names.empty()) return;
    Problem(absl::StrCat(
        "plan: no source reaches task", names.size() == 1 ? " " : "s ",
        absl::StrJoin(names, ", "),
        ": they are on or behind a cycle through an initial register with "
        "no input from outside it, which would run forever; feed the cycle "
        "from a source (a task that consumes nothing)"));
  }

  const Plan& plan_;
  const DeviceProbe probe_;
  const KernelBindings& bindings_;
  CompiledPlan* compiled_ = nullptr;
  std::vector<std::string> problems_;
  bool multi_machine_ = false;
  std::vector<int> topological_order_;  // tasks on no cycle
  // Blobs by regst_desc_id: as the plan states them, and as settled.
  std::map<int64_t, std::vector<BlobDesc>> declared_;
  std::set<int64_t> legacy_;  // stated by elem_cnt alone
  std::map<int64_t, std::vector<BlobDesc>> resolved_;
  std::set<int64_t> unknown_blobs_;  // not settled: a problem upstream
  std::set<int> failed_kernel_;
  std::map<int64_t, int> index_of_task_id_;
  std::map<int64_t, Producer> producers_;              // by regst_desc_id
  std::map<int64_t, std::set<int64_t>> consumers_of_;  // desc -> task ids
  std::map<int, std::set<int>> edges_;  // producer task -> consumer tasks
  std::map<int, std::set<int>> initial_edges_;  // the same, initial registers
  std::set<int> unresolved_;
  std::set<int> gpu_unusable_;  // tasks on a GPU stream this machine lacks
};

}  // namespace

std::vector<std::string> ValidatePlan(const Plan& plan, DeviceProbe probe) {
  KernelBindings registry_only;
  return Validator(plan, std::move(probe), registry_only).Run(nullptr);
}

std::vector<std::string> ValidateAndBind(const CompileOptions& options,
                                         CompiledPlan* compiled) {
  compiled->kernels.resize(compiled->plan.task_size());
  KernelBindings registry_only;
  const KernelBindings& bindings =
      options.bindings != nullptr ? *options.bindings : registry_only;
  Validator validator(compiled->plan, options.probe, bindings);
  validator.set_multi_machine(options.multi_machine);
  std::vector<std::string> problems = validator.Run(compiled);
  if (problems.empty()) compiled->blobs = validator.resolved_blobs();
  return problems;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
