#ifndef ACTORFLOW_COMPILER_SIGNATURE_H_
#define ACTORFLOW_COMPILER_SIGNATURE_H_

#include <string>

#include "proto/job.pb.h"

namespace actorflow::internal {

// A ParallelSignature as the compiler reasons about it. On one device every
// signature means the whole tensor: kBroadcast.
struct Signature {
  enum Kind { kSplit, kBroadcast, kPartialSum };
  Kind kind = kBroadcast;
  int axis = 0;  // kSplit only

  static Signature Split(int axis) { return {kSplit, axis}; }
  static Signature Whole() { return {kBroadcast, 0}; }
  static Signature FromProto(const ParallelSignature& proto);

  bool operator==(const Signature& other) const {
    return kind == other.kind && (kind != kSplit || axis == other.axis);
  }
  bool operator!=(const Signature& other) const { return !(*this == other); }
  // "split(1)", "broadcast", "partial_sum"
  std::string ToString() const;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_COMPILER_SIGNATURE_H_
