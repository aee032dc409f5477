#include "compiler/plan_or_job.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "runtime/plan_loader.h"

namespace actorflow {

bool LooksLikeJob(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    if (std::isspace(static_cast<unsigned char>(text[i]))) {
      ++i;
    } else if (text[i] == '#') {
      while (i < text.size() && text[i] != '\n') ++i;
    } else {
      break;
    }
  }
  size_t end = i;
  while (end < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[end])) ||
          text[end] == '_')) {
    ++end;
  }
  const std::string field = text.substr(i, end - i);
  return field == "op" || field == "memory_budget_bytes" ||
         field == "streams_per_device";
}

namespace {

// A line that opens an `op` block: "op {" (any spacing).
bool HasOpBlock(const std::string& text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, "op")) continue;
    line = absl::StripLeadingAsciiWhitespace(line);
    if (absl::StartsWith(line, "{")) return true;
  }
  return false;
}

// A job's first field may be total_piece_num, which plans have too: then
// whichever parses decides, a Plan first.
absl::StatusOr<std::optional<Job>> ParseJobIfJob(const std::string& path,
                                                 const PlanFile& file) {
  Job job;
  if (!file.text) {
    if (job.ParseFromString(file.contents) && job.op_size() > 0) return job;
    return std::optional<Job>();
  }
  if (LooksLikeJob(file.contents)) {
    absl::Status parsed = ParseTextMessage(file.contents, path, &job);
    if (!parsed.ok()) return parsed;
    return job;
  }
  Plan plan;
  if (ParseTextMessage(file.contents, path, &plan).ok()) {
    return std::optional<Job>();
  }
  absl::Status as_job = ParseTextMessage(file.contents, path, &job);
  if (as_job.ok() && job.op_size() > 0) return job;
  // Neither parses: a file with an `op` block is a job with a mistake, and
  // the job parser's message names it; otherwise the plan's does.
  if (!as_job.ok() && HasOpBlock(file.contents)) return as_job;
  return std::optional<Job>();
}

}  // namespace

absl::StatusOr<Job> LoadJob(const std::string& path) {
  absl::StatusOr<PlanFile> file = ReadPlanFile(path);
  if (!file.ok()) return file.status();
  Job job;
  if (file->text) {
    absl::Status parsed = ParseTextMessage(file->contents, path, &job);
    if (!parsed.ok()) return parsed;
  } else if (!job.ParseFromString(file->contents)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a binary Job (protobuf parse failed)"));
  }
  return job;
}

absl::StatusOr<LoadedPlan> LoadPlanOrJob(const std::string& path,
                                         const JobCompileOptions& options) {
  absl::StatusOr<PlanFile> file = ReadPlanFile(path);
  if (!file.ok()) return file.status();
  absl::StatusOr<std::optional<Job>> job = ParseJobIfJob(path, *file);
  if (!job.ok()) return job.status();
  LoadedPlan loaded;
  if (!job->has_value()) {
    absl::StatusOr<Plan> plan = LoadPlan(path);
    if (!plan.ok()) return plan.status();
    loaded.plan = std::move(*plan);
    return loaded;
  }
  absl::StatusOr<CompiledJob> compiled = CompileJob(**job, options);
  if (!compiled.ok()) return compiled.status();
  loaded.plan = std::move(compiled->plan);
  loaded.job = std::move(compiled->report);
  return loaded;
}

}  // namespace actorflow
