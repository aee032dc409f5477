#include "runtime/plan_loader.h"

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

absl::StatusOr<Plan> ParseTextPlan(const std::string& text,
                                   const std::string& name) {
  Plan plan;
  CollectErrors errors(name);
  google::protobuf::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, &plan)) {
    return absl::InvalidArgumentError(errors.Joined());
  }
  return plan;
}

absl::StatusOr<Plan> LoadPlan(const std::string& path) {
  bool text = EndsWithAny(path, {".pbtxt", ".textproto", ".txt"});
  bool binary = EndsWithAny(path, {".pb", ".bin"});
  if (!text && !binary) {
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
  if (text) return ParseTextPlan(contents.str(), path);
  Plan plan;
  if (!plan.ParseFromString(contents.str())) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": not a binary Plan (protobuf parse failed)"));
  }
  return plan;
}

}  // namespace actorflow
