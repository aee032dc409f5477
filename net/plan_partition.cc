#include "net/plan_partition.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace actorflow::internal::net {
namespace {

std::string Label(const TaskProto& task) {
  return absl::StrCat("task '", task.name(), "' (task_id ", task.task_id(),
                      ")");
}

// For each task_id, the machine it runs on.
std::map<int64_t, int32_t> MachineOfTask(const Plan& plan) {
  std::map<int64_t, int32_t> machine;
  for (const TaskProto& task : plan.task()) {
    machine[task.task_id()] = task.stream().machine_id();
  }
  return machine;
}

struct Produced {
  const TaskProto* producer;
  const RegisterDescProto* reg;
};

// Every produced register of the plan, by regst_desc_id.
std::map<int64_t, Produced> RegistersById(const Plan& plan) {
  std::map<int64_t, Produced> registers;
  for (const TaskProto& task : plan.task()) {
    for (const auto& [name, reg] : task.produced_regst_desc()) {
      registers[reg.regst_desc_id()] = {&task, &reg};
    }
  }
  return registers;
}

int64_t NextTaskId(const Plan& plan) {
  int64_t max_id = 0;
  for (const TaskProto& task : plan.task()) {
    max_id = std::max(max_id, task.task_id());
  }
  return max_id + 1;
}

// The first CPU stream index above every one `machine` uses: net tasks get
// a thread each from there on, as they block in their kernels.
int32_t FirstFreeStream(const Plan& plan, int32_t machine) {
  int32_t max_index = -1;
  for (const TaskProto& task : plan.task()) {
    if (task.stream().machine_id() == machine &&
        task.stream().device_type() == DeviceKinds::CPU) {
      max_index = std::max(max_index, task.stream().stream_index());
    }
  }
  return max_index + 1;
}

}  // namespace

std::string NetSendName(const NetEdge& edge) {
  return absl::StrCat("net_send_regst", edge.regst_desc_id, "_to_m",
                      edge.dst_rank);
}

std::string NetRecvName(const NetEdge& edge) {
  return absl::StrCat("net_recv_regst", edge.regst_desc_id, "_from_m",
                      edge.src_rank);
}

int32_t MaxMachineId(const Plan& plan) {
  int32_t max_id = 0;
  for (const TaskProto& task : plan.task()) {
    max_id = std::max(max_id, task.stream().machine_id());
  }
  return max_id;
}

absl::StatusOr<std::vector<NetEdge>> FindNetEdges(const Plan& plan,
                                                  int world_size) {
  std::vector<std::string> problems;
  for (const TaskProto& task : plan.task()) {
    const int32_t machine = task.stream().machine_id();
    if (machine < 0 || machine >= world_size) {
      problems.push_back(
          absl::StrCat(Label(task), ": stream.machine_id ", machine,
                       " is outside the job's machines 0..", world_size - 1,
                       " (WORLD_SIZE ", world_size, ")"));
    }
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }
  const std::map<int64_t, int32_t> machine_of = MachineOfTask(plan);
  std::vector<NetEdge> edges;
  int64_t next_id = NextTaskId(plan);
  for (const auto& [id, produced] : RegistersById(plan)) {  // sorted by id
    const TaskProto& producer = *produced.producer;
    const RegisterDescProto* reg = produced.reg;
    const int32_t src = producer.stream().machine_id();
    std::set<int32_t> destinations;
    for (int64_t consumer : reg->consumer_task_id()) {
      auto it = machine_of.find(consumer);
      if (it != machine_of.end() && it->second != src) {
        destinations.insert(it->second);
      }
    }
    if (destinations.empty()) continue;
    const std::string where =
        absl::StrCat(Label(producer), ": regst ", id, " is read on machine ",
                     *destinations.begin(), " but produced on machine ", src);
    if (reg->mem_case().device_type() != DeviceKinds::CPU) {
      problems.push_back(absl::StrCat(
          where,
          ", and it lives in device memory: only host registers cross "
          "machines (copy it to host memory with a d2h task first)"));
      continue;
    }
    if (reg->initial_register()) {
      problems.push_back(absl::StrCat(
          where,
          ", and it is an initial_register: a cycle must stay on one "
          "machine"));
      continue;
    }
    for (int32_t dst : destinations) {
      NetEdge edge;
      edge.regst_desc_id = id;
      edge.src_rank = src;
      edge.dst_rank = dst;
      edge.register_num = std::max(reg->register_num(), 1);
      edge.send_task_id = next_id++;
      edge.recv_task_id = next_id++;
      edges.push_back(edge);
    }
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }
  return edges;
}

absl::StatusOr<LocalPlan> PartitionPlan(const Plan& plan, int rank,
                                        int world_size) {
  absl::StatusOr<std::vector<NetEdge>> edges = FindNetEdges(plan, world_size);
  if (!edges.ok()) return edges.status();
  const std::map<int64_t, int32_t> machine_of = MachineOfTask(plan);
  const std::map<int64_t, Produced> registers = RegistersById(plan);
  LocalPlan local;
  local.plan.set_total_piece_num(plan.total_piece_num());
  std::set<std::string> names;
  for (const TaskProto& task : plan.task()) {
    names.insert(task.name());
    if (task.stream().machine_id() != rank) continue;
    TaskProto* copy = local.plan.add_task();
    *copy = task;
    copy->mutable_stream()->set_machine_id(0);
    for (auto& [name, reg] : *copy->mutable_produced_regst_desc()) {
      reg.clear_consumer_task_id();
      for (int64_t consumer :
           task.produced_regst_desc().at(name).consumer_task_id()) {
        auto it = machine_of.find(consumer);
        // An unknown consumer stays, for validation to name.
        if (it == machine_of.end() || it->second == rank) {
          reg.add_consumer_task_id(consumer);
        }
      }
      for (const NetEdge& edge : *edges) {
        if (edge.regst_desc_id == reg.regst_desc_id()) {
          reg.add_consumer_task_id(edge.send_task_id);
        }
      }
    }
  }
  std::map<int64_t, const TaskProto*> task_by_id;
  for (const TaskProto& task : plan.task()) task_by_id[task.task_id()] = &task;
  int32_t next_stream = FirstFreeStream(plan, rank);
  std::vector<std::string> problems;
  // A transfer task never blocks its thread (its kernel is gated), so it
  // runs on the thread of the task it serves: no hand-off between threads
  // on the way out or in. Only a task on another kind of stream (a GPU or
  // a host-async one, where kernels run off the thread) makes it take a
  // CPU thread of its own.
  auto add_net_task = [&](int64_t task_id, const std::string& name,
                          const char* op_type, const TaskProto* next_to) {
    if (names.count(name) != 0) {
      problems.push_back(absl::StrCat("task name '", name,
                                      "' is taken; multi-machine runs name "
                                      "their transfer tasks so"));
    }
    TaskProto* task = local.plan.add_task();
    task->set_task_id(task_id);
    task->set_name(name);
    if (next_to != nullptr &&
        next_to->stream().device_type() == DeviceKinds::CPU &&
        !next_to->stream().host_async()) {
      *task->mutable_stream() = next_to->stream();
      task->mutable_stream()->set_machine_id(0);
    } else {
      task->mutable_stream()->set_device_type(DeviceKinds::CPU);
      task->mutable_stream()->set_stream_index(next_stream++);
    }
    task->mutable_kernel()->set_op_type(op_type);
    return task;
  };
  for (const NetEdge& edge : *edges) {
    if (edge.src_rank == rank) {
      TaskProto* send =
          add_net_task(edge.send_task_id, NetSendName(edge), "net_send",
                       registers.at(edge.regst_desc_id).producer);
      (*send->mutable_consumed_regst_desc_id())["in"].add_regst_desc_id(
          edge.regst_desc_id);
      (*send->mutable_kernel()->mutable_attr())["peer"].set_i(edge.dst_rank);
      local.sends.push_back(edge);
    }
    if (edge.dst_rank == rank) {
      const RegisterDescProto& original = *registers.at(edge.regst_desc_id).reg;
      const TaskProto* first_reader = nullptr;
      for (int64_t consumer : original.consumer_task_id()) {
        auto it = task_by_id.find(consumer);
        if (it != task_by_id.end() &&
            it->second->stream().machine_id() == rank) {
          first_reader = it->second;
          break;
        }
      }
      TaskProto* recv = add_net_task(edge.recv_task_id, NetRecvName(edge),
                                     "net_recv", first_reader);
      RegisterDescProto mirror = original;
      mirror.set_producer_task_id(edge.recv_task_id);
      mirror.clear_consumer_task_id();
      for (int64_t consumer : original.consumer_task_id()) {
        auto it = machine_of.find(consumer);
        if (it != machine_of.end() && it->second == rank) {
          mirror.add_consumer_task_id(consumer);
        }
      }
      (*recv->mutable_produced_regst_desc())["out"] = mirror;
      (*recv->mutable_kernel()->mutable_attr())["peer"].set_i(edge.src_rank);
      local.recvs.push_back(edge);
    }
  }
  if (!problems.empty()) {
    return absl::InvalidArgumentError(absl::StrJoin(problems, "\n"));
  }
  return local;
}

}  // namespace actorflow::internal::net
