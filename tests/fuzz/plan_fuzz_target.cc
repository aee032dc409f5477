// libFuzzer target: one input is a Plan (text format, else binary). It is
// parsed, validated and compiled, and if that succeeds and the plan is
// small enough, run for a few pieces under a deadline. Any crash, sanitizer
// report or uncaught exception is a finding; refusals and run errors are
// the expected outcome for most inputs.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "actorflow/compiled_plan.h"
#include "actorflow/plan_loader.h"
#include "actorflow/session.h"
#include "plan/plan_util.h"

namespace actorflow::internal {
namespace {

// Small enough that one input runs in well under a second, even under
// AddressSanitizer.
constexpr int64_t kMaxRegisterBytes = int64_t{4} << 20;
constexpr int kMaxTasks = 32;
constexpr size_t kMaxStreams = 8;
constexpr int64_t kMaxPieces = 16;
constexpr int64_t kMaxSpinUs = 1000;

absl::Status NoDevice(int) {
  return absl::UnavailableError("the fuzz target runs without CUDA devices");
}

// Plans the command would run, and quickly: no feeds or fetches (those
// need a caller), few tasks and threads, no long spins.
bool WorthRunning(const Plan& plan) {
  if (plan.task_size() > kMaxTasks) return false;
  std::set<std::string> streams;
  for (const TaskProto& task : plan.task()) {
    if (IsFeed(task) || IsFetch(task)) return false;
    streams.insert(ToStreamKey(task.stream()).ToString());
    if (task.kernel().op_type() == "spin") {
      auto us = task.kernel().attr().find("us");
      if (us != task.kernel().attr().end() && us->second.i() > kMaxSpinUs) {
        return false;
      }
    }
  }
  return streams.size() <= kMaxStreams;
}

void FuzzOne(const std::string& input) {
  absl::StatusOr<Plan> plan = ParseTextPlan(input, "fuzz input");
  if (!plan.ok()) {
    Plan binary;
    if (!binary.ParseFromString(input)) return;
    plan = std::move(binary);
  }
  CompileOptions compile;
  compile.probe = NoDevice;
  compile.max_register_bytes = kMaxRegisterBytes;
  if (!CompilePlan(*plan, compile).ok() || !WorthRunning(*plan)) return;
  SessionOptions options;
  options.probe = NoDevice;
  options.max_register_bytes = kMaxRegisterBytes;
  options.timeout = absl::Seconds(2);
  options.cancel_grace = absl::Seconds(1);
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(plan), std::move(options));
  if (!session.ok()) return;
  const int64_t total = (*session)->compiled().plan.total_piece_num();
  (void)(*session)->Run(total < 0 || total > kMaxPieces ? kMaxPieces : total);
}

}  // namespace
}  // namespace actorflow::internal

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  actorflow::internal::FuzzOne(
      std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
