#ifndef ACTORFLOW_ENGINE_PROFILER_H_
#define ACTORFLOW_ENGINE_PROFILER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "base/mutex.h"
#include "engine/context.h"

namespace actorflow::engine {

// What the engine's profiler keeps of one operation (one push). Times are
// nanoseconds on the steady clock since the engine was created.
struct OprRecord {
  // One variable the operation read or wrote, and what it waited for it.
  struct Dependency {
    uint64_t var = 0;  // Engine::VariableId
    std::string var_name;
    bool write = false;
    // When the variable let the operation run: at its push, or when an
    // earlier operation on it completed (`after`, its seq; -1: at push).
    int64_t granted_ns = 0;
    int64_t after = -1;
    // granted_ns - queued_ns: how long this variable held it back.
    int64_t wait_ns = 0;
  };

  std::string name;  // "(unnamed)" when pushed without one
  uint64_t seq = 0;  // push order
  Context ctx;
  FnProperty prop = FnProperty::kNormal;
  // The thread that ran it: "cpu(0) worker 0", "cpu priority 1",
  // "gpu(0) compute 0", "gpu(0) copy 1", "pool 3", "io 0", or "inline"
  // (kAsync operations, NaiveEngine, skipped ones).
  std::string worker;
  int64_t queued_ns = 0;    // pushed
  int64_t ready_ns = 0;     // every variable granted
  int64_t started_ns = 0;   // its function called (0: never ran)
  int64_t finished_ns = 0;  // completed
  // GPU operations: time on the device, from timing events recorded on the
  // worker's stream before its function ran and after the work it queued
  // (PushSync; for other operations, at completion). -1: none (a CPU
  // operation, or the events could not be made).
  int64_t device_ns = -1;
  std::vector<Dependency> deps;  // reads first, then writes
  absl::Status status;           // its error, or what it inherited
};

// Records of completed operations, from any thread. Engine::DumpProfile and
// Engine::ProfileTable present them.
class Profiler {
 public:
  void Add(OprRecord record);
  std::vector<OprRecord> Records() const;
  void Clear();

  // A Chrome trace (chrome://tracing, Perfetto): one row per worker, one
  // slice per operation with its context, variables and waits, and a flow
  // arrow from each operation to those whose dependency it released.
  std::string ChromeTrace() const;
  // Per name: count, total, mean and max run time, and total wait from
  // push to ready, in microseconds; the largest total first.
  std::string Table() const;

 private:
  mutable internal::Mutex mu_;
  std::vector<OprRecord> records_ ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_PROFILER_H_
