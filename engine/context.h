#ifndef ACTORFLOW_ENGINE_CONTEXT_H_
#define ACTORFLOW_ENGINE_CONTEXT_H_

#include <cstdint>
#include <string>

#include "actorflow/stream_key.h"

namespace actorflow::engine {

// Device indices an engine serves: 0 .. kMaxEngineDevices - 1.
constexpr int kMaxEngineDevices = 64;

// Where an engine operation runs: a device (the runtime's DeviceKind, as
// streams name theirs) and its index.
struct Context {
  DeviceKind device = DeviceKind::kCpu;
  int dev_id = 0;

  static Context CPU(int dev_id = 0) { return {DeviceKind::kCpu, dev_id}; }
  static Context GPU(int dev_id = 0) { return {DeviceKind::kGpu, dev_id}; }
  bool is_gpu() const { return device == DeviceKind::kGpu; }
  // "cpu(0)", "gpu(1)".
  std::string ToString() const {
    return (is_gpu() ? "gpu(" : "cpu(") + std::to_string(dev_id) + ")";
  }
  bool operator==(const Context& o) const {
    return device == o.device && dev_id == o.dev_id;
  }
};

// What an operation gets when it runs: its context and, on a GPU context,
// the cudaStream_t of the worker running it (null on CPU).
struct RunContext {
  Context ctx;
  void* stream = nullptr;

  template <typename StreamT>
  StreamT get_stream() const {
    return static_cast<StreamT>(stream);
  }
};

// How an operation is scheduled (MXNet's FnProperty).
// One byte: an Opr keeps it on its first cache line beside the function.
enum class FnProperty : uint8_t {
  kNormal,          // the device's FIFO workers
  kCopyFromGPU,     // a GPU copy worker of the source device
  kCopyToGPU,       // a GPU copy worker of the destination device
  kCPUPrioritized,  // the CPU priority pool, highest priority first
  kAsync,           // inline, on the thread that makes it ready
  kDeleteVar,       // DeleteVariable's operation
};

const char* FnPropertyName(FnProperty prop);

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_CONTEXT_H_
