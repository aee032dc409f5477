#ifndef ACTORFLOW_THREAD_CHANNEL_H_
#define ACTORFLOW_THREAD_CHANNEL_H_

#include <atomic>
#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "thread/cpu_relax.h"
#include "thread/futex.h"

namespace actorflow {

enum class ChannelStatus { kOk, kClosed };

struct ChannelOptions {
  // How long an empty receiver spins before it parks. Waking a parked thread
  // costs tens of microseconds on a VM; a spinning one takes a message in well
  // under one. 0 parks at once.
  int64_t spin_ns = 50'000;
  // Items the channel (and a Thread's receive batch and local queue) has room
  // for from the start. A receiver that never has more than this queued
  // makes no Send allocate, not even the first time a burst reaches a size.
  uint32_t reserve = 0;
};

// An unbounded many-senders, one-receiver queue.
//
// Senders push nodes onto a lock-free stack; the receiver takes the whole
// stack with one atomic exchange and reverses it, so a batch costs one atomic
// operation on the receiving side and items keep the order of their pushes
// (per sender, the order of its Send calls). Nodes are recycled through a
// lock-free free list: after warm-up, Send allocates nothing. Nodes live in
// chunks that are only freed with the channel, which is what makes reading a
// node's `next` after it was recycled harmless (the tagged CAS then fails).
//
// One thread at a time may receive (Receive/ReceiveMany/TryReceiveMany).
// T must be default-constructible and move-assignable.
template <typename T>
class Channel {
 public:
  explicit Channel(ChannelOptions options = {}) : options_(options) {
    std::lock_guard<std::mutex> lock(grow_mu_);
    while (CapacityLocked() < options.reserve) {
      uint32_t first = AddChunkLocked();
      PushFree(first, first);
    }
  }
  ~Channel() {
    for (std::atomic<Node*>& chunk : chunks_) delete[] chunk.load();
  }
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // kClosed after Close(); the item is then not queued.
  ChannelStatus Send(const T& item) { return Push(T(item)); }
  ChannelStatus Send(T&& item) { return Push(std::move(item)); }

  // Blocks until an item is available; kClosed once the channel is closed
  // and every item sent before the close has been received.
  ChannelStatus Receive(T* item) {
    while (pending_ == kNil) {
      bool closed = false;
      pending_ = TakeAll(&closed);
      if (pending_ != kNil) break;
      if (closed) return ChannelStatus::kClosed;
      WaitUntilNotEmpty();
    }
    Node& node = NodeAt(pending_);
    *item = std::move(node.value);
    uint32_t next = node.next.load(std::memory_order_relaxed);
    Recycle(pending_);
    pending_ = next;
    if (pending_ == kNil) FlushRecycled();
    return ChannelStatus::kOk;
  }

  // Blocks until at least one item is available, then appends everything
  // queued to `items` (whose capacity is reused: no allocation once it has
  // grown). kClosed, with nothing appended, once closed and drained.
  ChannelStatus ReceiveMany(std::vector<T>* items) {
    while (true) {
      bool closed = false;
      if (Drain(items, &closed) > 0) return ChannelStatus::kOk;
      if (closed) return ChannelStatus::kClosed;
      WaitUntilNotEmpty();
    }
  }

  // Appends everything queued now; never blocks. Returns how many.
  size_t TryReceiveMany(std::vector<T>* items) {
    bool closed = false;
    return Drain(items, &closed);
  }

  // Later sends report kClosed; the receiver still gets everything sent
  // before, then kClosed. Wakes a parked receiver. Idempotent.
  void Close() {
    sent_.fetch_or(kClosedBit, std::memory_order_seq_cst);
    parked_.store(0, std::memory_order_seq_cst);
    FutexWakeAll(&parked_);
  }

  bool closed() const {
    return (sent_.load(std::memory_order_acquire) & kClosedBit) != 0;
  }

  // Observability for tests and benchmarks.
  bool receiver_parked() const {
    return parked_.load(std::memory_order_acquire) != 0;
  }
  uint64_t wake_count() const { return wakes_.load(std::memory_order_relaxed); }
  // Nodes allocated so far (the high-water mark of queued items, rounded up
  // to chunk sizes).
  uint64_t capacity() const {
    std::lock_guard<std::mutex> lock(grow_mu_);
    return CapacityLocked();
  }

 private:
  static constexpr uint32_t kNil = 0xFFFFFFFFu;
  static constexpr uint64_t kIndexMask = 0xFFFFFFFFu;
  // `sent_` holds the index of the newest queued node and this bit, so a Send
  // and a Close are ordered by one word: nothing is queued after the close.
  static constexpr uint64_t kClosedBit = uint64_t{1} << 32;
  // Chunk k holds kFirstChunkSize << k nodes; 26 chunks span 2^32 - 64
  // indices, all below kNil.
  static constexpr int kFirstChunkShift = 6;
  static constexpr uint32_t kFirstChunkSize = 1u << kFirstChunkShift;
  static constexpr int kMaxChunks = 32 - kFirstChunkShift;

  struct Node {
    T value{};
    std::atomic<uint32_t> next{kNil};
  };

  Node& NodeAt(uint32_t index) const {
    uint64_t v = uint64_t{index} + kFirstChunkSize;
    int chunk = std::bit_width(v) - 1 - kFirstChunkShift;
    uint64_t offset = v - (uint64_t{kFirstChunkSize} << chunk);
    return chunks_[chunk].load(std::memory_order_acquire)[offset];
  }

  ChannelStatus Push(T&& item) {
    uint32_t index = PopFree();
    Node& node = NodeAt(index);
    node.value = std::move(item);
    // Guess "empty and open", the usual state of a channel between a sender
    // and a receiver that keeps up: the first access to sent_ is then the
    // compare-exchange itself, which takes the cache line once instead of
    // reading it and taking it again. A wrong guess only costs the retry.
    uint64_t head = kNil;
    do {
      if (head & kClosedBit) {
        node.value = T();
        PushFree(index, index);
        return ChannelStatus::kClosed;
      }
      node.next.store(static_cast<uint32_t>(head), std::memory_order_relaxed);
    } while (!sent_.compare_exchange_weak(
        head, index, std::memory_order_seq_cst, std::memory_order_relaxed));
    // Dekker pairing with WaitUntilNotEmpty: the push above and this load are
    // both seq_cst, as are the receiver's store to parked_ and its re-read of
    // sent_, so either we see it parked or it sees our node.
    if (parked_.load(std::memory_order_seq_cst) != 0 &&
        parked_.exchange(0, std::memory_order_seq_cst) != 0) {
      wakes_.fetch_add(1, std::memory_order_relaxed);
      FutexWakeAll(&parked_);
    }
    return ChannelStatus::kOk;
  }

  // Takes every queued node; returns them oldest first as a chain.
  uint32_t TakeAll(bool* closed) {
    uint64_t head = sent_.load(std::memory_order_acquire);
    while ((head & kIndexMask) != kNil &&
           !sent_.compare_exchange_weak(head, (head & kClosedBit) | kNil,
                                        std::memory_order_acquire,
                                        std::memory_order_acquire)) {
    }
    *closed = (head & kClosedBit) != 0;
    uint32_t index = static_cast<uint32_t>(head);
    uint32_t oldest_first = kNil;
    while (index != kNil) {
      Node& node = NodeAt(index);
      uint32_t next = node.next.load(std::memory_order_relaxed);
      node.next.store(oldest_first, std::memory_order_relaxed);
      oldest_first = index;
      index = next;
    }
    return oldest_first;
  }

  // Appends the leftover of an earlier Receive, then one snapshot of what
  // is queued now. One snapshot, not "until empty": a receiver that kept
  // re-taking could be held forever by fast senders.
  size_t Drain(std::vector<T>* items, bool* closed) {
    size_t count = 0;
    uint32_t chain = pending_;
    pending_ = kNil;
    for (int round = 0; round < 2; ++round) {
      while (chain != kNil) {
        Node& node = NodeAt(chain);
        items->push_back(std::move(node.value));
        ++count;
        uint32_t next = node.next.load(std::memory_order_relaxed);
        Recycle(chain);
        chain = next;
      }
      if (round == 0) chain = TakeAll(closed);
    }
    FlushRecycled();
    return count;
  }

  void WaitUntilNotEmpty() {
    auto empty = [this](std::memory_order order) {
      return sent_.load(order) == kNil;  // no node and not closed
    };
    if (options_.spin_ns > 0) {
      auto deadline = std::chrono::steady_clock::now() +
                      std::chrono::nanoseconds(options_.spin_ns);
      while (true) {
        for (int i = 0; i < 64; ++i) {
          if (!empty(std::memory_order_acquire)) return;
          CpuRelax();
        }
        if (std::chrono::steady_clock::now() >= deadline) break;
        // The sender we wait for may be queued behind us (more runnable
        // threads than cores): give it the core. A quick reply arrives
        // within the pauses above and never pays for this system call.
        std::this_thread::yield();
      }
    }
    while (true) {
      parked_.store(1, std::memory_order_seq_cst);
      if (!empty(std::memory_order_seq_cst)) break;
      FutexWait(&parked_, 1);
      if (!empty(std::memory_order_acquire)) break;
    }
    parked_.store(0, std::memory_order_relaxed);
  }

  // The free list: a Treiber stack whose head packs a 32-bit tag above the
  // index; every change bumps the tag, so a stale compare-exchange fails.
  uint32_t PopFree() {
    while (true) {
      uint64_t head = free_.load(std::memory_order_acquire);
      while (static_cast<uint32_t>(head) != kNil) {
        uint32_t index = static_cast<uint32_t>(head);
        uint32_t next = NodeAt(index).next.load(std::memory_order_relaxed);
        uint64_t tag = (head >> 32) + 1;
        if (free_.compare_exchange_weak(head, (tag << 32) | next,
                                        std::memory_order_acquire,
                                        std::memory_order_acquire)) {
          return index;
        }
      }
      uint32_t index;
      if (TryGrow(&index)) return index;
    }
  }

  // Links first..last (already chained through `next`) onto the free list.
  void PushFree(uint32_t first, uint32_t last) {
    Node& tail = NodeAt(last);
    uint64_t head = free_.load(std::memory_order_relaxed);
    uint64_t tag;
    do {
      tail.next.store(static_cast<uint32_t>(head), std::memory_order_relaxed);
      tag = (head >> 32) + 1;
    } while (!free_.compare_exchange_weak(head, (tag << 32) | first,
                                          std::memory_order_release,
                                          std::memory_order_relaxed));
  }

  // Receiver side: received nodes are chained locally and returned to the
  // free list in one operation per batch. The caller has read `next` first.
  void Recycle(uint32_t index) {
    NodeAt(index).next.store(recycled_first_, std::memory_order_relaxed);
    if (recycled_first_ == kNil) recycled_last_ = index;
    recycled_first_ = index;
  }

  void FlushRecycled() {
    if (recycled_first_ == kNil) return;
    PushFree(recycled_first_, recycled_last_);
    recycled_first_ = recycled_last_ = kNil;
  }

  // Slow path, taken only while the channel holds more items than ever
  // before: allocates the next chunk and keeps its first node for the caller.
  // Returns false, allocating nothing, if another sender refilled the free
  // list meanwhile.
  bool TryGrow(uint32_t* index) {
    std::lock_guard<std::mutex> lock(grow_mu_);
    if (static_cast<uint32_t>(free_.load(std::memory_order_acquire)) != kNil) {
      return false;
    }
    *index = AddChunkLocked();
    return true;
  }

  // Allocates the next chunk and frees all its nodes but the first, whose
  // index it returns.
  uint32_t AddChunkLocked() {
    if (num_chunks_ == kMaxChunks) std::abort();  // 2^32 items queued.
    uint32_t size = kFirstChunkSize << num_chunks_;
    uint32_t base = size - kFirstChunkSize;
    Node* chunk = new Node[size];
    for (uint32_t i = 1; i + 1 < size; ++i) {
      chunk[i].next.store(base + i + 1, std::memory_order_relaxed);
    }
    chunks_[num_chunks_].store(chunk, std::memory_order_release);
    ++num_chunks_;
    PushFree(base + 1, base + size - 1);
    return base;
  }

  uint64_t CapacityLocked() const {
    return (uint64_t{kFirstChunkSize} << num_chunks_) - kFirstChunkSize;
  }

  const ChannelOptions options_;

  alignas(64) std::atomic<uint64_t> sent_{kNil};
  alignas(64) std::atomic<uint64_t> free_{kNil};
  alignas(64) std::atomic<uint32_t> parked_{0};
  std::atomic<uint64_t> wakes_{0};

  // Receiver-private.
  alignas(64) uint32_t pending_ = kNil;
  uint32_t recycled_first_ = kNil;
  uint32_t recycled_last_ = kNil;

  mutable std::mutex grow_mu_;
  int num_chunks_ = 0;  // guarded by grow_mu_
  std::atomic<Node*> chunks_[kMaxChunks] = {};
};

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_CHANNEL_H_
