#ifndef ACTORFLOW_PIPELINE_SAMPLE_DEALER_H_
#define ACTORFLOW_PIPELINE_SAMPLE_DEALER_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

// Hands the samples of each piece to whichever worker asks first, so that
// a worker with cheap samples (a small JPEG) takes more of them than one
// with dear ones (a large PNG). Results stay bit-identical: a sample's
// randomness depends on its position, never on its worker, and the batch
// puts samples back in position order.
namespace actorflow::internal::pipeline {

class SampleDealer {
 public:
  // `lag`: how many pieces one worker of the stage can be ahead of another
  // (the prefetch depth: the reader cannot pass a piece that the slowest
  // worker still holds).
  explicit SampleDealer(int64_t lag) : slots_(lag + 2) {}

  // The next unclaimed index (0, 1, ...) of piece `piece`; every call for
  // that piece gets a different one.
  int64_t Claim(int64_t piece) {
    Slot& slot = slots_[piece % static_cast<int64_t>(slots_.size())];
    if (slot.piece.load(std::memory_order_acquire) != piece) {
      MutexLock lock(&mu_);
      // The slot's last piece is finished by every worker: none can be
      // more than `lag` behind this one.
      if (slot.piece.load(std::memory_order_relaxed) != piece) {
        slot.next.store(0, std::memory_order_relaxed);
        slot.piece.store(piece, std::memory_order_release);
      }
    }
    return slot.next.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  struct Slot {
    std::atomic<int64_t> piece{-1};
    std::atomic<int64_t> next{0};
  };
  // Serializes a slot's move to a new piece; the slots are atomics, read
  // without it.
  Mutex mu_;
  std::vector<Slot> slots_;
};

// The dealers of one pipeline, one per first-stage operator; shared by the
// kernels of its workers.
class SampleDealers {
 public:
  explicit SampleDealers(int64_t lag) : lag_(lag) {}
  SampleDealer* For(int64_t op_index) {
    MutexLock lock(&mu_);
    auto& dealer = dealers_[op_index];
    if (!dealer) dealer = std::make_unique<SampleDealer>(lag_);
    return dealer.get();
  }

 private:
  const int64_t lag_;
  Mutex mu_;
  std::map<int64_t, std::unique_ptr<SampleDealer>> dealers_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SAMPLE_DEALER_H_
