#include "plan/plan_builder.h"

#include "absl/strings/str_cat.h"
#include "actor/blob_desc_proto.h"
#include "google/protobuf/text_format.h"

namespace actorflow::internal {

AttrValue FloatAttr(double value) {
  AttrValue attr;
  attr.set_f(value);
  return attr;
}

AttrValue IntAttr(int64_t value) {
  AttrValue attr;
  attr.set_i(value);
  return attr;
}

AttrValue StringAttr(std::string value) {
  AttrValue attr;
  attr.set_s(std::move(value));
  return attr;
}

AttrValue BoolAttr(bool value) {
  AttrValue attr;
  attr.set_b(value);
  return attr;
}

// A list attr is a list even when empty: mutable_list() sets the value's
// case, which no element would set for an empty one.
AttrValue IntListAttr(const std::vector<int64_t>& values) {
  AttrValue attr;
  AttrList* list = attr.mutable_list();
  for (int64_t v : values) list->add_i(v);
  return attr;
}

AttrValue FloatListAttr(const std::vector<double>& values) {
  AttrValue attr;
  AttrList* list = attr.mutable_list();
  for (double v : values) list->add_f(v);
  return attr;
}

AttrValue StringListAttr(const std::vector<std::string>& values) {
  AttrValue attr;
  AttrList* list = attr.mutable_list();
  for (const std::string& v : values) list->add_s(v);
  return attr;
}

BlobDescProto BlobProto(std::string name, DataType type,
                        std::vector<int64_t> shape, bool is_dynamic) {
  BlobDescProto blob;
  blob.set_name(std::move(name));
  blob.set_data_type(ToProto(type));
  for (int64_t dim : shape) blob.add_shape(dim);
  blob.set_is_dynamic(is_dynamic);
  return blob;
}

TaskProto KernelTask(const std::string& op_type,
                     const std::map<std::string, AttrValue>& attrs) {
  TaskProto task;
  task.set_task_id(1);
  task.set_name(op_type);
  task.mutable_kernel()->set_op_type(op_type);
  for (const auto& [key, value] : attrs) {
    (*task.mutable_kernel()->mutable_attr())[key] = value;
  }
  return task;
}

std::string KernelTaskText(const std::string& op_type,
                           const std::map<std::string, AttrValue>& attrs) {
  std::string text;
  google::protobuf::TextFormat::PrintToString(KernelTask(op_type, attrs),
                                              &text);
  return text;
}

absl::StatusOr<Plan> BuildPlan(const std::vector<TaskDef>& tasks,
                               int64_t total_piece_num) {
  std::map<std::string, int64_t> id_of;
  for (size_t i = 0; i < tasks.size(); ++i) {
    id_of[tasks[i].name] = static_cast<int64_t>(i) + 1;
  }
  Plan plan;
  plan.set_total_piece_num(total_piece_num);
  std::map<int64_t, TaskProto*> by_id;
  for (size_t i = 0; i < tasks.size(); ++i) {
    const TaskDef& def = tasks[i];
    int64_t id = static_cast<int64_t>(i) + 1;
    TaskProto* task = plan.add_task();
    task->set_task_id(id);
    task->set_name(def.name);
    task->mutable_stream()->set_stream_index(def.stream_index);
    task->mutable_stream()->set_host_async(def.host_async);
    if (def.gpu) {
      task->mutable_stream()->set_device_type(DeviceKinds::GPU);
      task->mutable_stream()->set_device_index(def.device_index);
    }
    task->mutable_kernel()->set_op_type(def.op_type);
    for (const auto& [key, value] : def.attrs) {
      (*task->mutable_kernel()->mutable_attr())[key] = value;
    }
    if (def.has_output) {
      RegisterDescProto& out = (*task->mutable_produced_regst_desc())["out"];
      out.set_regst_desc_id(10 * id);
      out.set_producer_task_id(id);
      out.set_register_num(def.register_num);
      if (!def.blobs.empty()) {
        for (const BlobDescProto& blob : def.blobs) *out.add_blob() = blob;
      } else if (!def.infer_output) {
        out.set_elem_cnt(def.elem_cnt);
      }
      if (def.gpu && def.op_type != "d2h") {
        out.mutable_mem_case()->set_device_type(DeviceKinds::GPU);
        out.mutable_mem_case()->set_device_index(def.device_index);
      }
    }
    by_id[id] = task;
  }
  for (size_t i = 0; i < tasks.size(); ++i) {
    int64_t id = static_cast<int64_t>(i) + 1;
    for (const std::string& input : tasks[i].inputs) {
      auto it = id_of.find(input);
      if (it == id_of.end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "task '", tasks[i].name, "': input '", input, "' is no task"));
      }
      TaskProto* producer = by_id[it->second];
      auto out = producer->mutable_produced_regst_desc()->find("out");
      if (out == producer->mutable_produced_regst_desc()->end()) {
        return absl::InvalidArgumentError(absl::StrCat(
            "task '", tasks[i].name, "': input '", input, "' has no output"));
      }
      out->second.add_consumer_task_id(id);
      (*by_id[id]->mutable_consumed_regst_desc_id())["in"].add_regst_desc_id(
          out->second.regst_desc_id());
    }
  }
  return plan;
}

}  // namespace actorflow::internal
