#ifndef ACTORFLOW_ACTOR_REGISTER_LAYOUT_H_
#define ACTORFLOW_ACTOR_REGISTER_LAYOUT_H_

#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "actorflow/blob_desc.h"

namespace actorflow::internal {

// Where each blob starts in a register's one allocation: every blob
// aligned to kBlobAlignment bytes. The runtime's choice, not the kernel
// API's: kernels see each blob's own pointer.
inline constexpr int64_t kBlobAlignment = 64;
struct RegisterLayout {
  std::vector<int64_t> offsets;  // per blob
  int64_t bytes = 0;             // the whole register
};
RegisterLayout LayOut(absl::Span<const BlobDesc> blobs);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_REGISTER_LAYOUT_H_
