#ifndef ACTORFLOW_MEMORY_MEMORY_RECYCLER_H_
#define ACTORFLOW_MEMORY_MEMORY_RECYCLER_H_

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "memory/synced_memory.h"

namespace actorflow::internal {

// Pageable host buffers that registers handed over to a caller, taken back
// when the caller is done with them, for the next register that hands its
// own over: in a loop that drops each batch before it takes the one after
// the next, a buffer goes round instead of a new one being allocated (and
// zero-filled, page by page) every time.
//
// Owners handed out (Lend) may outlive the recycler: their buffers are then
// freed rather than kept. Any thread.
class MemoryRecycler : public std::enable_shared_from_this<MemoryRecycler> {
 public:
  // At most `keep_per_size` buffers of each size are kept.
  explicit MemoryRecycler(int keep_per_size = 4)
      : keep_per_size_(keep_per_size) {}

  // A pageable host buffer of `bytes` with its host copy allocated: a kept
  // one (its bytes whatever they were), else a new one (zero-filled).
  absl::StatusOr<std::shared_ptr<SyncedMemory>> Get(size_t bytes);

  // An owner for the caller: `memory` stays alive while it, or any copy of
  // it, does; then comes back here (while the recycler lives).
  std::shared_ptr<const void> Lend(std::shared_ptr<SyncedMemory> memory);

  // Buffers kept now (tests).
  int kept() const;

 private:
  void Put(std::shared_ptr<SyncedMemory> memory);

  const int keep_per_size_;
  mutable Mutex mu_;
  absl::flat_hash_map<size_t, std::vector<std::shared_ptr<SyncedMemory>>> kept_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_MEMORY_MEMORY_RECYCLER_H_
