#ifndef ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_
#define ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_

#include <cstdint>

#include "absl/container/flat_hash_set.h"
#include "absl/types/span.h"
#include "base/mutex.h"

namespace actorflow::internal::pipeline {

// The JPEG files (by a 64-bit hash of their bytes) this process has decoded
// to the end of their data without an error or a warning. A window of one
// of them need not read past its last row: the rows below a window are
// entropy-decoded only to find damage there (so that a file fails whatever
// window is drawn for it), and these have none. Pixels and verdicts are the
// same either way: the same bytes decode the same. Two files whose hashes
// collide (about n^2 / 2^65 for n files) would share a verdict. At most
// kMaxFiles are kept; past that, files are read to the end every time.
class CleanJpegs {
 public:
  static constexpr int64_t kMaxFiles = int64_t{1} << 22;

  // The process's.
  static CleanJpegs& Get();
  static uint64_t Key(absl::Span<const uint8_t> encoded);

  bool Contains(uint64_t key) const;
  void Add(uint64_t key);

 private:
  mutable Mutex mu_;
  absl::flat_hash_set<uint64_t> keys_ ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_
