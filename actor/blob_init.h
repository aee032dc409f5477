#ifndef ACTORFLOW_ACTOR_BLOB_INIT_H_
#define ACTORFLOW_ACTOR_BLOB_INIT_H_

#include <cstdint>

#include "absl/types/span.h"
#include "actorflow/blob_desc.h"
#include "actorflow/tensor_view.h"

// How the runtime fills the kernel API's Blob (actorflow/tensor_view.h),
// whose pointers point into storage its owner keeps.
namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Points `blob` at `desc` (which must outlive it), its bytes at `data`
// and its current shape at `shape` (desc->shape.size() entries, owned by
// the caller), and sets that shape to the maximum.
void InitBlob(const BlobDesc* desc, int64_t regst_desc_id, char* data,
              int64_t* shape, Blob* blob);
// Sets the current shape (the blob's rank, checked by the caller).
void SetBlobShape(absl::Span<const int64_t> shape, Blob* blob);
// Back to the maximum shape (a dynamic blob before each act).
inline void ResetBlobShape(Blob* blob) {
  SetBlobShape(absl::Span<const int64_t>(blob->max_shape, blob->rank), blob);
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_ACTOR_BLOB_INIT_H_
