#include "thread/balanced_splitter.h"

#include <algorithm>

namespace actorflow::internal {

BalancedSplitter::BalancedSplitter(int64_t total, int64_t parts)
    : total_(std::max<int64_t>(total, 0)),
      parts_(std::max<int64_t>(parts, 1)),
      base_(total_ / parts_),
      extra_(total_ % parts_) {}

Range BalancedSplitter::At(int64_t i) const {
  int64_t begin = i * base_ + std::min(i, extra_);
  return Range{begin, begin + base_ + (i < extra_ ? 1 : 0)};
}

}  // namespace actorflow::internal
