#include "actorflow/register_view.h"

namespace actorflow {

Blob* RegisterBlobs::FindBlob(absl::string_view name) {
  for (int b = 0; b < num_blobs_; ++b) {
    if (blobs_[b].desc->name == name) return &blobs_[b];
  }
  return nullptr;
}

}  // namespace actorflow
