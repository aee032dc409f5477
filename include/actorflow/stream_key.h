#ifndef ACTORFLOW_STREAM_KEY_H_
#define ACTORFLOW_STREAM_KEY_H_

#include <cstdint>
#include <string>

#include "absl/strings/str_cat.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

enum class DeviceKind : int32_t { kCpu = 0, kGpu = 1 };

inline const char* DeviceKindName(DeviceKind kind) {
  return kind == DeviceKind::kGpu ? "gpu" : "cpu";
}

// Which thread runs a task: the in-memory form of the plan's StreamKeyProto.
// Each distinct key gets its own thread.
struct StreamKey {
  int32_t machine_id = 0;
  DeviceKind device = DeviceKind::kCpu;
  int32_t device_index = 0;
  int32_t stream_index = 0;
  // A host asynchronous stream (see StreamKeyProto.host_async in plan.proto).
  bool host_async = false;

  friend bool operator==(const StreamKey&, const StreamKey&) = default;

  template <typename H>
  friend H AbslHashValue(H h, const StreamKey& key) {
    return H::combine(std::move(h), key.machine_id, key.device,
                      key.device_index, key.stream_index, key.host_async);
  }

  // "m0/cpu0/s1" ("m0/cpu0/s1a" for a host asynchronous stream): short
  // enough for thread names and error messages.
  std::string ToString() const {
    return absl::StrCat("m", machine_id, "/", DeviceKindName(device),
                        device_index, "/s", stream_index,
                        host_async ? "a" : "");
  }
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_STREAM_KEY_H_
