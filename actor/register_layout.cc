#include "actor/register_layout.h"

namespace actorflow::internal {

RegisterLayout LayOut(absl::Span<const BlobDesc> blobs) {
  RegisterLayout layout;
  for (const BlobDesc& blob : blobs) {
    layout.offsets.push_back(layout.bytes);
    int64_t bytes = blob.byte_size();
    layout.bytes +=
        (bytes + kBlobAlignment - 1) / kBlobAlignment * kBlobAlignment;
  }
  return layout;
}

}  // namespace actorflow::internal
