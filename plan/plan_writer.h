#ifndef ACTORFLOW_PLAN_PLAN_WRITER_H_
#define ACTORFLOW_PLAN_PLAN_WRITER_H_

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "proto/plan.pb.h"

namespace actorflow::internal {

inline StreamKeyProto CpuStream(int index) {
  StreamKeyProto stream;
  stream.set_stream_index(index);
  return stream;
}

inline StreamKeyProto GpuStream(int index) {
  StreamKeyProto stream;
  stream.set_device_type(DeviceKinds::GPU);
  stream.set_stream_index(index);
  return stream;
}

// Writes tasks and their registers for code that compiles a plan (the data
// pipeline, the MLP trainer): tasks are numbered 1..n in order, a task's
// registers 100 * task_id + k, and every producer's consumer list is kept
// in step with its consumers, so the plan is consistent by construction.
class PlanWriter {
 public:
  TaskProto* AddTask(const std::string& name, const std::string& op_type,
                     const StreamKeyProto& stream) {
    TaskProto* task = plan_.add_task();
    task->set_task_id(plan_.task_size());
    task->set_name(name);
    *task->mutable_stream() = stream;
    task->mutable_kernel()->set_op_type(op_type);
    return task;
  }
  // A produced register; its blobs come from shape inference unless given.
  int64_t AddOutput(TaskProto* task, const std::string& key, int register_num,
                    bool on_device, std::vector<BlobDescProto> blobs = {}) {
    RegisterDescProto& desc = (*task->mutable_produced_regst_desc())[key];
    const int64_t id = task->task_id() * 100 + task->produced_regst_desc_size();
    desc.set_regst_desc_id(id);
    desc.set_producer_task_id(task->task_id());
    desc.set_register_num(register_num);
    if (on_device) desc.mutable_mem_case()->set_device_type(DeviceKinds::GPU);
    for (BlobDescProto& blob : blobs) *desc.add_blob() = std::move(blob);
    producers_[id] = {task->task_id(), key};
    return id;
  }
  void Consume(TaskProto* task, const std::string& key, int64_t id) {
    (*task->mutable_consumed_regst_desc_id())[key].add_regst_desc_id(id);
    Desc(id).add_consumer_task_id(task->task_id());
  }
  // The produced register `id` (it must have been added).
  RegisterDescProto& Desc(int64_t id) {
    const auto& [producer, out_key] = producers_.at(id);
    return (*plan_.mutable_task(static_cast<int>(producer - 1))
                 ->mutable_produced_regst_desc())[out_key];
  }
  Plan& plan() { return plan_; }

 private:
  Plan plan_;
  std::map<int64_t, std::pair<int64_t, std::string>> producers_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_PLAN_PLAN_WRITER_H_
