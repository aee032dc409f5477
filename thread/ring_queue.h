#ifndef ACTORFLOW_THREAD_RING_QUEUE_H_
#define ACTORFLOW_THREAD_RING_QUEUE_H_

#include <cstddef>
#include <memory>
#include <utility>

namespace actorflow {

// A single-thread FIFO over a power-of-two ring that doubles when full and
// never shrinks, so a queue that has reached its working size allocates
// nothing more (std::deque frees and reallocates blocks as it drains).
// Push and Pop are a handful of instructions: this is the local queue of
// every actor thread and every actor input.
template <typename T>
class RingQueue {
 public:
  explicit RingQueue(size_t initial_capacity = 64) {
    size_t capacity = 1;
    while (capacity < initial_capacity) capacity <<= 1;
    slots_ = std::make_unique<T[]>(capacity);
    mask_ = capacity - 1;
  }

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
    auto bigger = std::make_unique<T[]>(2 * capacity());
    for (size_t i = 0; i < n; ++i) {
      bigger[i] = std::move(slots_[(head_ + i) & mask_]);
    }
    slots_ = std::move(bigger);
    mask_ = 2 * mask_ + 1;
    head_ = 0;
    tail_ = n;
  }

  std::unique_ptr<T[]> slots_;
  size_t mask_ = 0;
  // Free-running counters; the slot is the counter modulo the capacity.
  size_t head_ = 0;
  size_t tail_ = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_RING_QUEUE_H_
