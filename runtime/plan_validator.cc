#include "runtime/plan_validator.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/kernel.h"
#include "memory/cuda_api.h"
#include "runtime/plan_util.h"

namespace actorflow {
namespace {

std::string MemoryName(const MemoryCase& mem) {
  return mem.device_type() == GPU
             ? absl::StrCat("GPU memory of device ", mem.device_index())
             : std::string("host memory");
}

struct Producer {
  int task = 0;  // index into plan.task()
  std::string name;
  const RegstDescProto* desc = nullptr;
};

class Validator {
 public:
  Validator(const Plan& plan, DeviceProbe probe)
      : plan_(plan), probe_(std::move(probe)) {}

  std::vector<std::string> Run() {
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
    for (int t = 0; t < plan_.task_size(); ++t) CheckKernel(t);
    CheckCycles();
    return problems_;
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
    const StreamId& stream = task(t).stream();
    if (stream.machine_id() != 0) {
      Problem(absl::StrCat(Label(t),
                           ": stream.machine_id: must be 0 (multi-machine "
                           "runs are not supported yet), got ",
                           stream.machine_id()));
    }
    if (stream.device_index() < 0 || stream.stream_index() < 0) {
      Problem(absl::StrCat(
          Label(t), ": stream: device_index and stream_index must be >= 0"));
    }
    if (stream.device_type() == GPU) {
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
      std::string where =
          absl::StrCat(Label(t), ": produced_regst_desc['", name,
                       "'] (regst_desc ", desc->regst_desc_id(), ")");
      auto [it, fresh] =
          producers_.emplace(desc->regst_desc_id(), Producer{t, name, desc});
      if (!fresh) {
        Problem(absl::StrCat(where,
                             ": regst_desc_id: duplicate, also "
                             "produced by ",
                             Label(it->second.task), " as '", it->second.name,
                             "'"));
        continue;
      }
      if (desc->producer_task_id() != task(t).task_id()) {
        Problem(absl::StrCat(where, ".producer_task_id: is ",
                             desc->producer_task_id(), ", but ", Label(t),
                             " produces it"));
      }
      if (desc->register_num() < 1) {
        Problem(absl::StrCat(where, ".register_num: must be >= 1, got ",
                             desc->register_num()));
      }
      if (desc->elem_cnt() < 0) {
        Problem(absl::StrCat(where, ".elem_cnt: must be >= 0, got ",
                             desc->elem_cnt()));
      }
      const MemoryCase& mem = desc->mem_case();
      if (mem.device_type() == GPU) {
        std::string problem = GpuProblem(mem.device_index());
        if (!problem.empty()) {
          Problem(absl::StrCat(where, ".mem_case.device_type GPU (device ",
                               mem.device_index(), "): ", problem));
        }
      } else if (mem.pinned()) {
        absl::Status pinnable = probe_(0);
        if (!pinnable.ok()) {
          Problem(absl::StrCat(where,
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
      std::string where =
          absl::StrCat(Label(t), ": consumed_regst_desc_id['", name, "']");
      if (ids.empty()) Problem(absl::StrCat(where, ": empty id list"));
      for (int64_t id : ids) {
        if (!seen.insert(id).second) {
          Problem(absl::StrCat(where, ": regst_desc ", id,
                               " is consumed twice by this task"));
          unresolved_.insert(t);
          continue;
        }
        auto it = producers_.find(id);
        if (it == producers_.end()) {
          Problem(absl::StrCat(where, ": regst_desc ", id,
                               " is produced by no task"));
          unresolved_.insert(t);
          continue;
        }
        consumers_of_[id].insert(task(t).task_id());
        edges_[it->second.task].insert(t);
      }
    }
  }

  void CheckConsumerLists() {
    for (const auto& [id, producer] : producers_) {
      std::string where = absl::StrCat(
          Label(producer.task), ": produced_regst_desc['", producer.name,
          "'] (regst_desc ", id, ").consumer_task_id");
      std::set<int64_t> listed;
      for (int64_t consumer : producer.desc->consumer_task_id()) {
        if (!listed.insert(consumer).second) {
          Problem(absl::StrCat(where, ": lists task_id ", consumer, " twice"));
        }
      }
      const std::set<int64_t>& actual = consumers_of_[id];
      for (int64_t consumer : listed) {
        if (actual.count(consumer)) continue;
        auto task_it = index_of_task_id_.find(consumer);
        Problem(
            absl::StrCat(where, ": lists task_id ", consumer,
                         task_it == index_of_task_id_.end()
                             ? ", which is no task of the plan"
                             : absl::StrCat(", but ", Label(task_it->second),
                                            " does not consume it")));
      }
      for (int64_t consumer : actual) {
        if (listed.count(consumer)) continue;
        Problem(absl::StrCat(where, ": ", Label(index_of_task_id_.at(consumer)),
                             " consumes it but is not listed"));
      }
    }
  }

  // Kernels touch only memory their stream's device can address: host
  // memory on CPU streams; on a GPU stream, that device's memory, except
  // the host side of h2d (its input) and d2h (its output).
  void CheckPlacement(int t) {
    const StreamId& stream = task(t).stream();
    const bool gpu = stream.device_type() == GPU;
    auto expected = [&](bool host_side) {
      MemoryCase mem;
      if (gpu && !host_side) {
        mem.set_device_type(GPU);
        mem.set_device_index(stream.device_index());
      }
      return mem;
    };
    auto same_place = [](const MemoryCase& a, const MemoryCase& b) {
      return a.device_type() == b.device_type() &&
             (a.device_type() == CPU || a.device_index() == b.device_index());
    };
    std::string runs_on =
        gpu ? absl::StrCat("GPU stream of device ", stream.device_index())
            : std::string("CPU stream");
    std::string hint =
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
              runs_on, " and reads ", MemoryName(want), " ", hint));
        }
      }
    }
    MemoryCase want = expected(IsDeviceToHost(task(t)));
    for (const auto& [name, desc] : SortedOutputs(task(t))) {
      if (same_place(desc->mem_case(), want)) continue;
      Problem(absl::StrCat(Label(t), ": produced_regst_desc['", name,
                           "'] (regst_desc ", desc->regst_desc_id(),
                           ").mem_case: is ", MemoryName(desc->mem_case()),
                           ", but this task runs on a ", runs_on,
                           " and writes ", MemoryName(want), " ", hint));
    }
  }

  void CheckKernel(int t) {
    const std::string& op_type = task(t).kernel().op_type();
    const KernelRegistry& registry = KernelRegistry::Get();
    const DeviceKind device = task(t).stream().device_type() == GPU
                                  ? DeviceKind::kGpu
                                  : DeviceKind::kCpu;
    const DeviceKind other =
        device == DeviceKind::kGpu ? DeviceKind::kCpu : DeviceKind::kGpu;
    if (!registry.Has(op_type, device) && !registry.Has(op_type, other)) {
      // A build without CUDA has no GPU kernels (h2d, d2h) at all; the
      // GPU stream's problem already says why.
      if (gpu_unusable_.count(t) && !cuda::BuiltWithCuda()) return;
      Problem(absl::StrCat(
          Label(t), ": kernel.op_type: unknown op_type '", op_type,
          "' (known: ", absl::StrJoin(registry.op_types(), ", "), ")"));
      return;
    }
    if (!registry.Has(op_type, device)) {
      // Already reported when the GPU itself is unusable here.
      if (gpu_unusable_.count(t)) return;
      Problem(absl::StrCat(
          Label(t), ": kernel.op_type: '", op_type, "' has no ",
          DeviceKindName(device), " kernel; it runs on ", DeviceKindName(other),
          " streams (", DeviceKindName(device),
          " kernels: ", absl::StrJoin(registry.op_types(device), ", "), ")"));
      return;
    }
    // A kernel's signature check needs every input resolved, once.
    if (unresolved_.count(t)) return;
    std::vector<KernelIo> inputs;
    for (const auto& [name, ids] : SortedInputs(task(t))) {
      for (int64_t id : ids) {
        inputs.push_back({name, id, producers_.at(id).desc->elem_cnt()});
      }
    }
    std::vector<KernelIo> outputs;
    for (const auto& [name, desc] : SortedOutputs(task(t))) {
      outputs.push_back({name, desc->regst_desc_id(), desc->elem_cnt()});
    }
    auto kernel = registry.Create(op_type, device);
    absl::Status status =
        (*kernel)->Init(KernelInitContext(task(t), inputs, outputs));
    if (!status.ok()) {
      Problem(absl::StrCat(Label(t), ": ", status.message()));
    }
  }

  // Kahn's algorithm; whatever it cannot order lies on a cycle or behind
  // one. Every such task has a predecessor that is also unordered, so
  // walking predecessors from one must come back to a task already seen:
  // that loop is a cycle, reported in edge direction.
  void CheckCycles() {
    int n = plan_.task_size();
    std::vector<int> in_degree(n, 0);
    std::map<int, std::vector<int>> preds;
    for (const auto& [from, tos] : edges_) {
      for (int to : tos) {
        ++in_degree[to];
        preds[to].push_back(from);
      }
    }
    std::vector<int> ready;
    for (int t = 0; t < n; ++t) {
      if (in_degree[t] == 0) ready.push_back(t);
    }
    std::vector<bool> ordered(n, false);
    while (!ready.empty()) {
      int t = ready.back();
      ready.pop_back();
      ordered[t] = true;
      for (int to : edges_[t]) {
        if (--in_degree[to] == 0) ready.push_back(to);
      }
    }
    std::set<int> on_reported_cycle;
    for (int start = 0; start < n; ++start) {
      if (ordered[start]) continue;
      std::vector<int> walk;
      std::map<int, size_t> position;
      int t = start;
      while (!position.count(t)) {
        position[t] = walk.size();
        walk.push_back(t);
        for (int pred : preds[t]) {
          if (!ordered[pred]) {
            t = pred;
            break;
          }
        }
      }
      std::vector<int> cycle(walk.begin() + position[t], walk.end());
      std::reverse(cycle.begin(), cycle.end());
      // Start at the task that comes first in the plan: one cycle, one text.
      std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()),
                  cycle.end());
      if (on_reported_cycle.count(cycle.front())) continue;
      std::vector<std::string> names;
      for (int c : cycle) {
        on_reported_cycle.insert(c);
        names.push_back(absl::StrCat("'", task(c).name(), "'"));
      }
      names.push_back(names.front());
      Problem(absl::StrCat("plan: cycle: ", absl::StrJoin(names, " -> "),
                           " (each waits on the one before it)"));
    }
  }

  const Plan& plan_;
  const DeviceProbe probe_;
  std::vector<std::string> problems_;
  std::map<int64_t, int> index_of_task_id_;
  std::map<int64_t, Producer> producers_;              // by regst_desc_id
  std::map<int64_t, std::set<int64_t>> consumers_of_;  // desc -> task ids
  std::map<int, std::set<int>> edges_;  // producer task -> consumer tasks
  std::set<int> unresolved_;
  std::set<int> gpu_unusable_;  // tasks on a GPU stream this machine lacks
};

}  // namespace

std::vector<std::string> ValidatePlan(const Plan& plan, DeviceProbe probe) {
  return Validator(plan, std::move(probe)).Run();
}

}  // namespace actorflow
