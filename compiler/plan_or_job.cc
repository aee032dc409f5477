#include "compiler/plan_or_job.h"

#include <cctype>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "actorflow/plan_loader.h"

namespace actorflow::internal {

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
// whichever parses decides, a Plan first. Each file is read and parsed once.
absl::StatusOr<PlanOrJob> ParsePlanOrJob(const std::string& path,
                                         const PlanFile& file) {
  Job job;
  Plan plan;
  if (!file.text) {
    if (job.ParseFromString(file.contents) && job.op_size() > 0) return job;
    if (!plan.ParseFromString(file.contents)) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": not a binary Plan (protobuf parse failed)"));
    }
    return plan;
  }
  if (LooksLikeJob(file.contents)) {
    absl::Status parsed = ParseTextMessage(file.contents, path, &job);
    if (!parsed.ok()) return parsed;
    return job;
  }
  absl::Status as_plan = ParseTextMessage(file.contents, path, &plan);
  if (as_plan.ok()) return plan;
  absl::Status as_job = ParseTextMessage(file.contents, path, &job);
  if (as_job.ok() && job.op_size() > 0) return job;
  // Neither parses: a file with an `op` block is a job with a mistake, and
  // the job parser's message names it; otherwise the plan's does.
  if (!as_job.ok() && HasOpBlock(file.contents)) return as_job;
  return as_plan;
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

absl::StatusOr<PlanOrJob> ReadPlanOrJob(const std::string& path) {
  absl::StatusOr<PlanFile> file = ReadPlanFile(path);
  if (!file.ok()) return file.status();
  return ParsePlanOrJob(path, *file);
}

absl::StatusOr<LoadedPlan> LoadPlanOrJob(const std::string& path,
                                         const JobCompileOptions& options) {
  absl::StatusOr<PlanOrJob> read = ReadPlanOrJob(path);
  if (!read.ok()) return read.status();
  LoadedPlan loaded;
  if (Plan* plan = std::get_if<Plan>(&*read)) {
    loaded.plan = std::move(*plan);
    return loaded;
  }
  absl::StatusOr<CompiledJob> compiled =
      CompileJob(std::get<Job>(*read), options);
  if (!compiled.ok()) return compiled.status();
  loaded.plan = std::move(compiled->plan);
  loaded.job = std::move(compiled->report);
  return loaded;
}

}  // namespace actorflow::internal
