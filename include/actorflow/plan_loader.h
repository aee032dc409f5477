#ifndef ACTORFLOW_PLAN_LOADER_H_
#define ACTORFLOW_PLAN_LOADER_H_

#include <string>

#include "absl/status/statusor.h"
#include "actorflow/proto/plan.pb.h"
#include "actorflow/version.h"
#include "google/protobuf/message.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Reads a Plan from `path`: text format for .pbtxt/.textproto/.txt, binary
// for .pb/.bin. Errors name the file, and for text the line and column.
absl::StatusOr<Plan> LoadPlan(const std::string& path);

// A plan file's bytes, and whether its suffix says text.
struct PlanFile {
  std::string contents;
  bool text = false;
};
absl::StatusOr<PlanFile> ReadPlanFile(const std::string& path);

// Text format into any message; errors are "NAME:LINE:COLUMN: what".
absl::Status ParseTextMessage(const std::string& text, const std::string& name,
                              google::protobuf::Message* message);

// The same from memory; `name` is used in messages.
absl::StatusOr<Plan> ParseTextPlan(const std::string& text,
                                   const std::string& name);

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_PLAN_LOADER_H_
