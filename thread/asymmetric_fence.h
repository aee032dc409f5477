#ifndef ACTORFLOW_THREAD_ASYMMETRIC_FENCE_H_
#define ACTORFLOW_THREAD_ASYMMETRIC_FENCE_H_

#include <atomic>

namespace actorflow::internal {

// A store-load fence split between a hot side and a rare side.
//
// Channel senders publish an item and then read the receiver's state word;
// a receiver about to park sets that word and then looks for items. Each
// side needs a full fence between its store and its load, or both can miss
// each other. A full fence on every Send stalls the sender until its store
// has left the core, which costs a cache-line round trip on every hop. So
// the hot side issues only LightFence (a compiler barrier) and the rare
// side issues HeavyFence, which makes every running thread of the process
// execute a full fence (Linux membarrier, private expedited) before it
// returns: whatever a sender stored before it read the state word is then
// visible to the parker, or the sender reads the word after that fence and
// sees the new state.
//
// Where membarrier is unavailable (or under ThreadSanitizer, which does not
// model it), both sides fall back to a seq_cst fence.
bool AsymmetricFenceEnabled();

inline void LightFence() {
  if (AsymmetricFenceEnabled()) {
    std::atomic_signal_fence(std::memory_order_seq_cst);
  } else {
    std::atomic_thread_fence(std::memory_order_seq_cst);
  }
}

void HeavyFence();

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_ASYMMETRIC_FENCE_H_
