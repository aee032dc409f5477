#ifndef ACTORFLOW_PLAN_PLAN_SIGNATURE_H_
#define ACTORFLOW_PLAN_PLAN_SIGNATURE_H_

#include <string>
#include <vector>

#include "google/protobuf/repeated_field.h"
#include "proto/checkpoint.pb.h"
#include "proto/plan.pb.h"

// What a checkpoint records of the plan it was taken from, so that a
// restore refuses another plan and says how it differs. A task's signature
// is what decides its results: name, op_type, attributes, where each input
// comes from and the blobs of each output. Where it runs (stream,
// register_num, memory case) and its ids are left out: they never change a
// result.
namespace actorflow::internal {

// Per task of a compiled plan (every output's blobs stated), in plan order.
std::vector<TaskSignature> SignPlan(const Plan& plan);
// 16 hex digits; equal for equal signatures.
std::string SignatureFingerprint(
    const google::protobuf::RepeatedPtrField<TaskSignature>& signature);
std::string SignatureFingerprint(const std::vector<TaskSignature>& signature);
// The first difference between a checkpoint's plan and this one, in words
// naming the task and what differs (a task, an op_type, an attribute, an
// input, a blob or its shape); "" when they are the same.
std::string DiffSignatures(
    const google::protobuf::RepeatedPtrField<TaskSignature>& checkpoint,
    const std::vector<TaskSignature>& plan);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_PLAN_PLAN_SIGNATURE_H_
