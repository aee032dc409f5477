#include "actorflow/register_view.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

Blob* RegisterBlobs::FindBlob(absl::string_view name) {
  for (int b = 0; b < num_blobs_; ++b) {
    if (blobs_[b].desc->name == name) return &blobs_[b];
  }
  return nullptr;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
