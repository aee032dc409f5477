#ifndef ACTORFLOW_PLAN_PLAN_BUILDER_H_
#define ACTORFLOW_PLAN_PLAN_BUILDER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "actorflow/data_type.h"
#include "proto/plan.pb.h"

namespace actorflow::internal {

// One task of a plan built in code: its inputs are other tasks' outputs,
// named by task, consumed under "in" in the order given.
struct TaskDef {
  std::string name;
  std::string op_type;
  std::vector<std::string> inputs;
  int32_t stream_index = 0;  // CPU stream on machine 0
  bool host_async = false;   // StreamKeyProto.host_async
  // A GPU stream of device `device_index`; its output then lives in that
  // device's memory, except a d2h task's (host memory, as validation wants).
  bool gpu = false;
  int32_t device_index = 0;
  bool has_output = true;  // produces "out"
  int32_t register_num = 2;
  int64_t elem_cnt = 4;
  // When set, the output's stated blobs (elem_cnt is then not written).
  std::vector<BlobDescProto> blobs;
  // Leave the output unstated (no elem_cnt, no blobs): shape inference
  // fills it in.
  bool infer_output = false;
  std::map<std::string, AttrValue> attrs;
};

AttrValue FloatAttr(double value);
AttrValue IntAttr(int64_t value);
AttrValue StringAttr(std::string value);
AttrValue BoolAttr(bool value);
AttrValue IntListAttr(const std::vector<int64_t>& values);
AttrValue FloatListAttr(const std::vector<double>& values);
AttrValue StringListAttr(const std::vector<std::string>& values);
BlobDescProto BlobProto(std::string name, DataType type,
                        std::vector<int64_t> shape, bool is_dynamic = false);

// One task with this kernel, outside any plan (task_id 1, named after its
// op_type): what KernelHarness runs.
TaskProto KernelTask(const std::string& op_type,
                     const std::map<std::string, AttrValue>& attrs = {});
// The same in text format, as KernelHarness::Create takes a task.
std::string KernelTaskText(const std::string& op_type,
                           const std::map<std::string, AttrValue>& attrs = {});

// Numbers the tasks 1..n in order (task i's output is regst_desc 10 * i)
// and fills in producer and consumer lists, so the result is consistent
// by construction. Errors: an input naming no earlier-or-later task, or a
// task without output used as an input.
absl::StatusOr<Plan> BuildPlan(const std::vector<TaskDef>& tasks,
                               int64_t total_piece_num);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_PLAN_PLAN_BUILDER_H_
