#ifndef ACTORFLOW_PIPELINE_PIPELINE_DEFINITION_H_
#define ACTORFLOW_PIPELINE_PIPELINE_DEFINITION_H_

#include <vector>

#include "actorflow/proto/checkpoint.pb.h"

namespace actorflow::internal::pipeline {

// What decides a pipeline's batches, whatever its worker threads and
// prefetch depth: the task signatures of its plan (or of a checkpoint's)
// with each stage's worker copies ("chain@w", or "chain" alone) folded into
// one, their worker attributes and wiring left out (outputs too: their
// blobs follow from the attributes). Equal for the same pipeline at any
// num_threads: determinism across thread counts is the pipeline's promise,
// so a checkpoint of one resumes at another. `elastic`: also at any number
// of ranks (shard_id, num_shards, and the batch size, a rank's share of the
// global batch, left out too).
google::protobuf::RepeatedPtrField<TaskSignature> PipelineDefinition(
    const std::vector<TaskSignature>& signature, bool elastic);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_PIPELINE_DEFINITION_H_
