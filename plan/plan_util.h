#ifndef ACTORFLOW_PLAN_PLAN_UTIL_H_
#define ACTORFLOW_PLAN_PLAN_UTIL_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/stream_key.h"
#include "proto/plan.pb.h"

namespace actorflow::internal {

// A task's consumed descriptor ids by name, names sorted (proto maps have
// no order; the runtime and the validator must agree on one).
std::vector<std::pair<std::string, std::vector<int64_t>>> SortedInputs(
    const TaskProto& task);

// A task's produced descriptors by name, names sorted.
std::vector<std::pair<std::string, const RegisterDescProto*>> SortedOutputs(
    const TaskProto& task);

// The plan format's device kind and the C++ one, each way (the same
// numbers: plan.proto's DeviceKinds and actorflow/stream_key.h).
DeviceKind ToDeviceKind(DeviceKinds::Value kind);
DeviceKinds::Value ToProto(DeviceKind kind);

StreamKey ToStreamKey(const StreamKeyProto& stream);

// The copy kernels, whose one side is host memory on a GPU stream: h2d
// reads a host register, d2h writes one. The validator's placement rules and
// the runtime's pinning must agree on them.
bool IsHostToDevice(const TaskProto& task);
bool IsDeviceToHost(const TaskProto& task);

// The boundary kernels, whose actors move registers to and from the caller
// (Session) and which the command cannot run.
bool IsFeed(const TaskProto& task);
bool IsFetch(const TaskProto& task);

// "task 'name' (task_id 3)": how every message refers to a task.
std::string TaskLabel(const TaskProto& task);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_PLAN_PLAN_UTIL_H_
