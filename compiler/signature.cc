#include "compiler/signature.h"

#include "absl/strings/str_cat.h"

namespace actorflow::internal {

Signature Signature::FromProto(const ParallelSignature& proto) {
  switch (proto.kind_case()) {
    case ParallelSignature::kSplit:
      return Split(proto.split());
    case ParallelSignature::kPartialSum:
      return {kPartialSum, 0};
    default:
      return Whole();
  }
}

std::string Signature::ToString() const {
  switch (kind) {
    case kSplit:
      return absl::StrCat("split(", axis, ")");
    case kPartialSum:
      return "partial_sum";
    default:
      return "broadcast";
  }
}

}  // namespace actorflow::internal
