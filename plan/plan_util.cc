#include "plan/plan_util.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

std::vector<std::pair<std::string, std::vector<int64_t>>> SortedInputs(
    const TaskProto& task) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> inputs;
  for (const auto& [name, list] : task.consumed_regst_desc_id()) {
    inputs.emplace_back(name, std::vector<int64_t>(list.regst_desc_id().begin(),
                                                   list.regst_desc_id().end()));
  }
  std::sort(inputs.begin(), inputs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return inputs;
}

std::vector<std::pair<std::string, const RegisterDescProto*>> SortedOutputs(
    const TaskProto& task) {
  std::vector<std::pair<std::string, const RegisterDescProto*>> outputs;
  for (const auto& [name, desc] : task.produced_regst_desc()) {
    outputs.emplace_back(name, &desc);
  }
  std::sort(outputs.begin(), outputs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  return outputs;
}

DeviceKind ToDeviceKind(DeviceKinds::Value kind) {
  return kind == DeviceKinds::GPU ? DeviceKind::kGpu : DeviceKind::kCpu;
}

DeviceKinds::Value ToProto(DeviceKind kind) {
  return kind == DeviceKind::kGpu ? DeviceKinds::GPU : DeviceKinds::CPU;
}

StreamKey ToStreamKey(const StreamKeyProto& stream) {
  return StreamKey{
      .machine_id = stream.machine_id(),
      .device = ToDeviceKind(stream.device_type()),
      .device_index = stream.device_index(),
      .stream_index = stream.stream_index(),
      .host_async = stream.host_async(),
  };
}

bool IsHostToDevice(const TaskProto& task) {
  return task.kernel().op_type() == "h2d";
}

bool IsDeviceToHost(const TaskProto& task) {
  return task.kernel().op_type() == "d2h";
}

bool IsFeed(const TaskProto& task) { return task.kernel().op_type() == "feed"; }

bool IsFetch(const TaskProto& task) {
  return task.kernel().op_type() == "fetch";
}

std::string TaskLabel(const TaskProto& task) {
  return absl::StrCat("task '", task.name(), "' (task_id ", task.task_id(),
                      ")");
}

}  // namespace actorflow::internal
