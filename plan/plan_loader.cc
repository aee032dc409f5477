#include "actorflow/plan_loader.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/text_format.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace {

class CollectErrors : public google::protobuf::io::ErrorCollector {
 public:
  explicit CollectErrors(const std::string& name) : name_(name) {}
  void AddError(int line, google::protobuf::io::ColumnNumber column,
                const std::string& message) override {
    // The parser counts from 0; editors count from 1.
    errors_.push_back(
        absl::StrCat(name_, ":", line + 1, ":", column + 1, ": ", message));
  }
  void AddWarning(int line, google::protobuf::io::ColumnNumber column,
                  const std::string& message) override {
    AddError(line, column, message);
  }
  std::string Joined() const { return absl::StrJoin(errors_, "\n"); }

 private:
  const std::string& name_;
  std::vector<std::string> errors_;
};

bool EndsWithAny(const std::string& path,
                 std::initializer_list<const char*> suffixes) {
  for (const char* suffix : suffixes) {
    if (absl::EndsWith(path, suffix)) return true;
  }
  return false;
}

}  // namespace

absl::Status ParseTextMessage(const std::string& text, const std::string& name,
                              google::protobuf::Message* message) {
  CollectErrors errors(name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  return absl::OkStatus();
}

absl::StatusOr<Plan> ParseTextPlan(const std::string& text,
                                   const std::string& name) {
  Plan plan;
  absl::Status parsed = ParseTextMessage(text, name, &plan);
  if (!parsed.ok()) return parsed;
  return plan;
}

absl::StatusOr<PlanFile> ReadPlanFile(const std::string& path) {
  PlanFile file;
  file.text = EndsWithAny(path, {".pbtxt", ".textproto", ".txt"});
  const bool binary = EndsWithAny(path, {".pb", ".bin"});
  if (!file.text && !binary) {
    return absl::InvalidArgumentError(
        absl::StrCat(path,
                     ": unknown plan format; name it .pbtxt (text) or "
                     ".pb (binary)"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return absl::NotFoundError(
        absl::StrCat(path, ": cannot open: ", std::strerror(errno)));
  }
  std::stringstream contents;
  contents << in.rdbuf();
  file.contents = contents.str();
  return file;
}

absl::StatusOr<Plan> LoadPlan(const std::string& path) {
  absl::StatusOr<PlanFile> file = ReadPlanFile(path);
  if (!file.ok()) return file.status();
  if (file->text) return ParseTextPlan(file->contents, path);
  Plan plan;
  if (!plan.ParseFromString(file->contents)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a binary Plan (protobuf parse failed)"));
  }
  return plan;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
