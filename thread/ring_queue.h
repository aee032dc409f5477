#ifndef ACTORFLOW_THREAD_RING_QUEUE_H_
#define ACTORFLOW_THREAD_RING_QUEUE_H_

#include <cstddef>
#include <utility>
#include <vector>

namespace actorflow {

// A single-thread FIFO over a power-of-two ring that doubles when full and
// never shrinks, so a queue that has reached its working size allocates
// nothing more (std::deque frees and reallocates blocks as it drains).
template <typename T>
class RingQueue {
 public:
  explicit RingQueue(size_t initial_capacity = 64) {
    size_t capacity = 1;
    while (capacity < initial_capacity) capacity <<= 1;
    slots_.resize(capacity);
  }

  bool empty() const { return head_ == tail_; }
  size_t size() const { return tail_ - head_; }
  size_t capacity() const { return slots_.size(); }

  void Push(T item) {
    if (__builtin_expect(size() == slots_.size(), 0)) Grow();
    slots_[tail_ & (slots_.size() - 1)] = std::move(item);
    ++tail_;
  }

  // Precondition: !empty().
  T& front() { return slots_[head_ & (slots_.size() - 1)]; }
  const T& front() const { return slots_[head_ & (slots_.size() - 1)]; }

  // Precondition: !empty().
  T Pop() {
    T item = std::move(slots_[head_ & (slots_.size() - 1)]);
    ++head_;
    return item;
  }

 private:
  // Out of line: the hot Push stays small enough to inline.
  __attribute__((noinline, cold)) void Grow() {
    std::vector<T> bigger(slots_.size() * 2);
    size_t n = size();
    for (size_t i = 0; i < n; ++i) {
      bigger[i] = std::move(slots_[(head_ + i) & (slots_.size() - 1)]);
    }
    slots_.swap(bigger);
    head_ = 0;
    tail_ = n;
  }

  std::vector<T> slots_;
  // Free-running counters; the slot is the counter modulo the capacity.
  size_t head_ = 0;
  size_t tail_ = 0;
};

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_RING_QUEUE_H_
