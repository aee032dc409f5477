#ifndef ACTORFLOW_COMPILER_SIGNATURE_RULES_H_
#define ACTORFLOW_COMPILER_SIGNATURE_RULES_H_

#include <map>
#include <optional>
#include <string>

#include "compiler/signature.h"
#include "proto/job.pb.h"

namespace actorflow::internal {

// What an operator's kernel implies of its parallel signatures: the layout
// each input must have and the layout of each output, for the inputs and
// outputs a job leaves unstated. A stated signature always wins.
struct OpSignatures {
  std::map<std::string, Signature> inputs;   // by input key
  std::map<std::string, Signature> outputs;  // by output name
};

// The rule of `conf.op_type()` (and its attrs), given each input's
// signature as stated or as its producer lays it out (`given`, by key; the
// first input of a key stands for it). nullopt: the op_type has no rule, or
// none for this combination; the compiler's generic default applies (inputs
// as their producer lays them out, every input like the first, outputs like
// the first input). docs/jobs.md lists the rules.
std::optional<OpSignatures> InferSignatures(
    const OpConf& conf, const std::map<std::string, Signature>& given);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_COMPILER_SIGNATURE_RULES_H_
