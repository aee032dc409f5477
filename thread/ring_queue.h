#ifndef ACTORFLOW_THREAD_RING_QUEUE_H_
#define ACTORFLOW_THREAD_RING_QUEUE_H_

#include <cstddef>
#include <memory>
#include <utility>

namespace actorflow::internal {

// Storage for RingQueue's inline items; nothing at all (an empty base)
// when there are none.
template <typename T, size_t kInline>
struct RingInlineSlots {
  T* inline_slots() { return slots; }
  T slots[kInline] = {};
};
template <typename T>
struct RingInlineSlots<T, 0> {
  T* inline_slots() { return nullptr; }
};

// A single-thread FIFO over a power-of-two ring that doubles when full and
// never shrinks, so a queue that has reached its working size allocates
// nothing more (std::deque frees and reallocates blocks as it drains).
// Push and Pop are a handful of instructions: this is the local queue of
// every actor thread and every actor input.
//
// With kInline > 0 (a power of two), a queue of at most kInline items keeps
// them inside the object: an actor's rings of two registers then sit in the
// actor itself, one cache miss fewer per act in a plan larger than the
// caches.
template <typename T, size_t kInline = 0>
class RingQueue : private RingInlineSlots<T, kInline> {
  static_assert((kInline & (kInline - 1)) == 0, "kInline: a power of two");
  using RingInlineSlots<T, kInline>::inline_slots;

 public:
  explicit RingQueue(size_t initial_capacity = 64) {
    size_t capacity = 1;
    while (capacity < initial_capacity) capacity <<= 1;
    if (capacity <= kInline) {
      capacity = kInline;
      slots_ = inline_slots();
    } else {
      slots_ = new T[capacity]();
    }
    mask_ = capacity - 1;
  }
  // Moved-from, a queue may only be destroyed.
  RingQueue(RingQueue&& other) noexcept
      : RingInlineSlots<T, kInline>(std::move(other)),
        slots_(other.slots_),
        mask_(other.mask_),
        head_(other.head_),
        tail_(other.tail_) {
    if (other.slots_ == other.inline_slots()) slots_ = inline_slots();
    other.slots_ = nullptr;
  }
  ~RingQueue() {
    if (slots_ != inline_slots()) delete[] slots_;
  }
  RingQueue(const RingQueue&) = delete;
  RingQueue& operator=(const RingQueue&) = delete;
  RingQueue& operator=(RingQueue&&) = delete;

  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  size_t capacity() const { return mask_ + 1; }

  void Push(T item) {
    if (__builtin_expect(size() > mask_, 0)) Grow();
    slots_[tail_ & mask_] = std::move(item);
    ++tail_;
  }

  // Precondition: !empty().
  T& front() { return slots_[head_ & mask_]; }
  const T& front() const { return slots_[head_ & mask_]; }

  // The i-th oldest item; precondition: i < size().
  const T& at(size_t i) const { return slots_[(head_ + i) & mask_]; }

  void clear() { head_ = tail_; }

  // Precondition: !empty().
  T Pop() {
    T item = std::move(slots_[head_ & mask_]);
    ++head_;
    return item;
  }

 private:
  // Out of line: the hot Push stays small enough to inline.
  __attribute__((noinline, cold)) void Grow() {
    size_t n = size();
    T* bigger = new T[2 * capacity()]();
    for (size_t i = 0; i < n; ++i) {
      bigger[i] = std::move(slots_[(head_ + i) & mask_]);
    }
    if (slots_ != inline_slots()) delete[] slots_;
    slots_ = bigger;
    mask_ = 2 * mask_ + 1;
    head_ = 0;
    tail_ = n;
  }

  T* slots_ = nullptr;  // inline_slots() or the heap's
  size_t mask_ = 0;
  // Free-running counters; the slot is the counter modulo the capacity.
  size_t head_ = 0;
  size_t tail_ = 0;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_RING_QUEUE_H_
