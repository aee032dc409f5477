#ifndef ACTORFLOW_COMPILER_PLAN_OR_JOB_H_
#define ACTORFLOW_COMPILER_PLAN_OR_JOB_H_

#include <optional>
#include <string>
#include <variant>

#include "absl/status/statusor.h"
#include "actorflow/job_compiler.h"
#include "proto/job.pb.h"
#include "proto/plan.pb.h"

namespace actorflow::internal {

// What a file given to `actorflow run`, `validate`, `dot` or `launch` held.
struct LoadedPlan {
  Plan plan;
  // Set when the file held a Job: what compiling it made.
  std::optional<JobCompileReport> job;
};

// Whether `text` (a text-format message) is a Job rather than a Plan: its
// first field is one only a Job has (`op`, `memory_budget_bytes`,
// `streams_per_device`).
bool LooksLikeJob(const std::string& text);

// What a plan file holds, parsed once: a Plan or a Job (see LooksLikeJob;
// errors as LoadPlan's, or the job parser's for a file with `op` blocks).
using PlanOrJob = std::variant<Plan, Job>;
absl::StatusOr<PlanOrJob> ReadPlanOrJob(const std::string& path);

// Reads a Job (text or binary, by the same suffixes as LoadPlan).
absl::StatusOr<Job> LoadJob(const std::string& path);

// Reads `path` as LoadPlan does; a file that holds a Job is compiled.
// Errors name the file; a job's name the operator.
absl::StatusOr<LoadedPlan> LoadPlanOrJob(const std::string& path,
                                         const JobCompileOptions& options = {});

}  // namespace actorflow::internal

#endif  // ACTORFLOW_COMPILER_PLAN_OR_JOB_H_
