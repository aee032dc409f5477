#ifndef ACTORFLOW_THREAD_BALANCED_SPLITTER_H_
#define ACTORFLOW_THREAD_BALANCED_SPLITTER_H_

#include <cstdint>

namespace actorflow::internal {

// Half-open range [begin, end).
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

// Splits `total` items into `parts` contiguous ranges whose sizes differ by
// at most one; the first `total % parts` ranges get the extra item.
class BalancedSplitter {
 public:
  // Requires total >= 0 and parts >= 1 (clamped otherwise).
  BalancedSplitter(int64_t total, int64_t parts);

  int64_t parts() const { return parts_; }
  // Requires 0 <= i < parts().
  Range At(int64_t i) const;

 private:
  int64_t total_;
  int64_t parts_;
  int64_t base_;   // total / parts
  int64_t extra_;  // total % parts
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_BALANCED_SPLITTER_H_
