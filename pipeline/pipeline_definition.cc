#include "pipeline/pipeline_definition.h"

#include <string>

namespace actorflow::internal::pipeline {

google::protobuf::RepeatedPtrField<TaskSignature> PipelineDefinition(
    const std::vector<TaskSignature>& signature, bool elastic) {
  google::protobuf::RepeatedPtrField<TaskSignature> tasks;
  for (const TaskSignature& task : signature) {
    const std::string& name = task.name();
    const size_t at = name.rfind('@');
    if (at != std::string::npos && name.substr(at + 1) != "0") continue;
    TaskSignature& kept = *tasks.Add();
    kept = task;
    if (at != std::string::npos) kept.set_name(name.substr(0, at));
    for (const char* attr :
         {"worker", "workers", "inputs_per_output", "input_index"}) {
      kept.mutable_attr()->erase(attr);
    }
    if (elastic) {
      for (const char* attr :
           {"shard_id", "num_shards", "batch_size", "first_lane"}) {
        kept.mutable_attr()->erase(attr);
      }
    }
    kept.clear_input();
    kept.clear_output();
  }
  return tasks;
}

}  // namespace actorflow::internal::pipeline
