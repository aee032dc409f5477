#ifndef ACTORFLOW_ENGINE_ENGINE_OPTIONS_H_
#define ACTORFLOW_ENGINE_ENGINE_OPTIONS_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace actorflow::engine {

enum class EngineType {
  kNaive,              // "NaiveEngine": each push runs at once on the caller
  kThreadedPooled,     // "ThreadedEnginePooled": one shared pool + I/O pool
  kThreadedPerDevice,  // "ThreadedEnginePerDevice": pools per device (default)
};

// Accepts the names above, as $ACTORFLOW_ENGINE_TYPE spells them.
absl::StatusOr<EngineType> ParseEngineType(absl::string_view name);
const char* EngineTypeName(EngineType type);

// Worker counts. Defaults follow MXNet's.
struct EngineOptions {
  // ThreadedEnginePerDevice, per CPU device, FIFO.
  // $ACTORFLOW_CPU_WORKER_NTHREADS.
  int cpu_worker_nthreads = 1;
  // The CPU priority pool. $ACTORFLOW_CPU_PRIORITY_NTHREADS.
  int cpu_priority_nthreads = 4;
  // Per GPU device, compute. $ACTORFLOW_GPU_WORKER_NTHREADS.
  int gpu_worker_nthreads = 2;
  // Per GPU device, copies. $ACTORFLOW_GPU_COPY_NTHREADS.
  int gpu_copy_nthreads = 2;
  // ThreadedEnginePooled's shared pool: one per hardware thread.
  // $ACTORFLOW_POOL_NTHREADS.
  int pool_nthreads = DefaultPoolThreads();
  // Profile every operation from the start (Engine::DumpProfile).
  // $ACTORFLOW_PROFILER_AUTOSTART=1.
  bool profiling = false;

  static int DefaultPoolThreads();

  // Defaults overridden by the environment variables above. A value that is
  // not an integer in [1, 256] is an error naming the variable.
  static absl::StatusOr<EngineOptions> FromEnv();
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_ENGINE_OPTIONS_H_
