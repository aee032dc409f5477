#ifndef ACTORFLOW_THREAD_LANE_H_
#define ACTORFLOW_THREAD_LANE_H_

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace actorflow::internal {

// One sender's queue into a Channel: a single-producer single-consumer FIFO
// that never blocks and never loses order.
//
// Items go into a power-of-two ring of slots. Each slot carries the position
// it holds plus one, so the receiver sees an item by reading the slot itself:
// one cache line moves per item, and neither side performs a locked
// instruction. The receiver publishes how far it has read only once per
// batch; the sender reads that only when the ring looks full. When the ring
// is really full the sender links a ring twice the size and goes on there;
// the receiver follows the link once it has read the old ring to its end and
// frees it. So a lane grows to the most items ever queued in it and stays.
//
// Sealing settles a Send that races the channel's Close exactly. After the
// receiver seals a lane it takes items by compare-exchange; a sender that
// finds the lane sealed after publishing tries to take its item back the
// same way, and exactly one of the two wins (see Channel).
template <typename T>
class Lane {
 public:
  // `slots_in_use` counts slots over all of a channel's lanes.
  Lane(uint64_t capacity, bool born_sealed, std::atomic<uint64_t>* slots_in_use)
      : slots_in_use_(slots_in_use) {
    tail_segment_ = head_segment_ = NewSegment(capacity, 0);
    if (born_sealed) {
      careful_ = true;
      sealed_.store(true, std::memory_order_seq_cst);
    }
  }
  ~Lane() {
    for (Segment* s = head_segment_; s != nullptr;) {
      Segment* next = s->next.load(std::memory_order_acquire);
      FreeSegment(s);
      s = next;
    }
  }
  Lane(const Lane&) = delete;
  Lane& operator=(const Lane&) = delete;

  // ---- sender side: one sender at a time ----

  // Queues `item`; returns its position (for Settle).
  uint64_t Publish(T&& item) {
    const uint64_t position = tail_;
    Segment* segment = tail_segment_;
    if (Full(segment, position)) {
      head_cache_ = read_head_.load(std::memory_order_acquire);
      if (Full(segment, position)) segment = Grow(position);
    }
    Slot& slot = segment->slots[position & segment->mask];
    slot.value = std::move(item);
    slot.seq.store(position + 1, std::memory_order_release);
    tail_ = position + 1;
    return position;
  }

  // Call after Publish and the channel's store-load fence (the light side,
  // see asymmetric_fence.h), once the channel is known to be
  // closed. True if the receiver has taken or will take the item at
  // `position`; false if the item was taken back (and destroyed) instead.
  bool Settle(uint64_t position) {
    if (!sealed_.load(std::memory_order_seq_cst)) return true;
    if (position < head_at_seal_.load(std::memory_order_relaxed)) return true;
    // The item is the last this lane will ever carry, so it sits in the
    // current tail segment, which the receiver cannot have freed.
    Slot& slot = tail_segment_->slots[position & tail_segment_->mask];
    uint64_t expected = position + 1;
    if (!slot.seq.compare_exchange_strong(expected, kRetracted,
                                          std::memory_order_acq_rel)) {
      return true;  // the receiver took it
    }
    slot.value = T();  // the item is not queued
    return false;
  }

  // ---- receiver side ----

  // Whether Take may find something (an item, or a ring to move on to).
  bool MayHaveItem() const {
    const Segment* segment = head_segment_;
    uint64_t seq = segment->slots[head_ & segment->mask].seq.load(
        std::memory_order_acquire);
    return seq == head_ + 1 ||
           segment->next.load(std::memory_order_acquire) != nullptr;
  }

  // Hands up to `max` queued items to `sink`, oldest first; returns how many.
  template <typename Sink>
  uint64_t Take(uint64_t max, Sink&& sink) {
    uint64_t taken = 0;
    const uint64_t start = head_;
    while (taken < max) {
      Segment* segment = head_segment_;
      Slot& slot = segment->slots[head_ & segment->mask];
      uint64_t seq = slot.seq.load(std::memory_order_acquire);
      if (seq == head_ + 1) {
        if (careful_ && !slot.seq.compare_exchange_strong(
                            seq, kTaken, std::memory_order_acq_rel)) {
          ++head_;  // taken back by its sender
          continue;
        }
        sink(std::move(slot.value));
        ++head_;
        ++taken;
        continue;
      }
      if (seq == kRetracted) {
        ++head_;
        continue;
      }
      Segment* next = segment->next.load(std::memory_order_acquire);
      if (next == nullptr) break;
      // Everything written to the old ring is visible now; read it to its
      // end before moving on.
      if (head_ != segment->end) continue;
      head_segment_ = next;
      FreeSegment(segment);
    }
    if (head_ != start) read_head_.store(head_, std::memory_order_release);
    return taken;
  }

  // From now on items are taken by compare-exchange. The caller then issues
  // the heavy side of the store-load fence before taking anything.
  void Seal() {
    if (careful_) return;
    careful_ = true;
    head_at_seal_.store(head_, std::memory_order_relaxed);
    sealed_.store(true, std::memory_order_seq_cst);
  }

 private:
  static constexpr uint64_t kTaken = ~uint64_t{0};
  static constexpr uint64_t kRetracted = ~uint64_t{0} - 1;

  // Aligned to its size rounded up to a power of two (at most a cache
  // line), so that no slot straddles two lines: the receiver's poll and
  // take then move one line.
  static constexpr size_t kSlotAlign = std::min<size_t>(
      64, std::bit_ceil(sizeof(std::atomic<uint64_t>) + sizeof(T)));
  struct alignas(kSlotAlign) Slot {
    std::atomic<uint64_t> seq{0};
    T value{};
  };
  struct Segment {
    uint64_t mask = 0;
    uint64_t base = 0;  // position of the first item written here
    Slot* slots = nullptr;
    // The position of the first item in `next`; written before `next`.
    uint64_t end = 0;
    std::atomic<Segment*> next{nullptr};
  };

  Segment* NewSegment(uint64_t capacity, uint64_t base) {
    Segment* segment = new Segment;
    segment->mask = capacity - 1;
    segment->base = base;
    segment->slots = new Slot[capacity];
    slots_in_use_->fetch_add(capacity, std::memory_order_relaxed);
    return segment;
  }

  void FreeSegment(Segment* segment) {
    slots_in_use_->fetch_sub(segment->mask + 1, std::memory_order_relaxed);
    delete[] segment->slots;
    delete segment;
  }

  // Whether writing `position` into `segment` would overwrite an unread item
  // (by the sender's last view of the receiver's progress).
  bool Full(const Segment* segment, uint64_t position) const {
    return position - std::max(head_cache_, segment->base) > segment->mask;
  }

  // Out of line: taken only while the lane holds more items than ever.
  __attribute__((noinline)) Segment* Grow(uint64_t position) {
    Segment* bigger = NewSegment(2 * (tail_segment_->mask + 1), position);
    tail_segment_->end = position;
    tail_segment_->next.store(bigger, std::memory_order_release);
    tail_segment_ = bigger;
    return bigger;
  }

  std::atomic<uint64_t>* const slots_in_use_;

  // Sender-private.
  alignas(64) Segment* tail_segment_ = nullptr;
  uint64_t tail_ = 0;
  uint64_t head_cache_ = 0;

  // Receiver-private.
  alignas(64) Segment* head_segment_ = nullptr;
  uint64_t head_ = 0;
  bool careful_ = false;

  // Written by the receiver once per batch; read by the sender when full.
  alignas(64) std::atomic<uint64_t> read_head_{0};
  // Written once, by Seal.
  alignas(64) std::atomic<bool> sealed_{false};
  std::atomic<uint64_t> head_at_seal_{0};
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_LANE_H_
