#include "engine/engine_options.h"

#include <algorithm>
#include <cstdlib>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "actorflow/usable_cpus.h"

namespace actorflow::engine {

namespace {

struct EngineName {
  EngineType type;
  const char* name;
};

constexpr EngineName kEngineNames[] = {
    {EngineType::kNaive, "NaiveEngine"},
    {EngineType::kThreadedPooled, "ThreadedEnginePooled"},
    {EngineType::kThreadedPerDevice, "ThreadedEnginePerDevice"},
};

absl::Status ReadCount(const char* variable, int* value) {
  const char* text = std::getenv(variable);
  if (text == nullptr) return absl::OkStatus();
  int parsed = 0;
  if (!absl::SimpleAtoi(text, &parsed) || parsed < 1 || parsed > 256) {
    return absl::InvalidArgumentError(absl::StrCat(
        "$", variable, "='", text, "': expected a thread count from 1 to 256"));
  }
  *value = parsed;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EngineType> ParseEngineType(absl::string_view name) {
  for (const EngineName& entry : kEngineNames) {
    if (name == entry.name) return entry.type;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown engine type '", name,
                   "' (expected NaiveEngine, ThreadedEnginePooled or "
                   "ThreadedEnginePerDevice)"));
}

const char* EngineTypeName(EngineType type) {
  for (const EngineName& entry : kEngineNames) {
    if (entry.type == type) return entry.name;
  }
  return "unknown";
}

int EngineOptions::DefaultPoolThreads() { return ProcessUsableCpus().count; }

absl::StatusOr<EngineOptions> EngineOptions::FromEnv() {
  EngineOptions options;
  for (auto [variable, value] : {
           std::pair{"ACTORFLOW_CPU_WORKER_NTHREADS",
                     &options.cpu_worker_nthreads},
           std::pair{"ACTORFLOW_CPU_PRIORITY_NTHREADS",
                     &options.cpu_priority_nthreads},
           std::pair{"ACTORFLOW_GPU_WORKER_NTHREADS",
                     &options.gpu_worker_nthreads},
           std::pair{"ACTORFLOW_GPU_COPY_NTHREADS", &options.gpu_copy_nthreads},
           std::pair{"ACTORFLOW_POOL_NTHREADS", &options.pool_nthreads},
       }) {
    absl::Status status = ReadCount(variable, value);
    if (!status.ok()) return status;
  }
  if (const char* autostart = std::getenv("ACTORFLOW_PROFILER_AUTOSTART")) {
    const std::string value = autostart;
    if (value == "1" || value == "true") {
      options.profiling = true;
    } else if (!value.empty() && value != "0" && value != "false") {
      return absl::InvalidArgumentError(absl::StrCat(
          "$ACTORFLOW_PROFILER_AUTOSTART: 1 or 0 (true or false), got '", value,
          "'"));
    }
  }
  return options;
}

}  // namespace actorflow::engine
