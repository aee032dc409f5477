#ifndef ACTORFLOW_THREAD_CHANNEL_H_
#define ACTORFLOW_THREAD_CHANNEL_H_

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "thread/asymmetric_fence.h"
#include "thread/channel_options.h"
#include "thread/cpu_relax.h"
#include "thread/futex.h"
#include "thread/lane.h"
#include "thread/spin_mutex.h"
#include "thread/spin_wait.h"
#include "thread/usable_cpus.h"

namespace actorflow {

enum class ChannelStatus { kOk, kClosed };

static_assert(ChannelOptions{}.spin_ns == kDefaultSpinNs);

// Parks a channel's receiver somewhere other than on the channel's futex
// (in gRPC's completion queue, say, so that the thread the network wakes is
// the one that receives). Park returns once Unpark was called or on its own
// (the receiver then looks again); Unpark is called by senders, any thread.
class ChannelParker {
 public:
  virtual ~ChannelParker() = default;
  // True if it ran work that may have queued messages elsewhere (the
  // thread's local queue): the receiver then returns to its loop.
  virtual bool Park() = 0;
  virtual void Unpark() = 0;
};

namespace internal {
// Identity of the calling OS thread as a sender, and its cache of the lane
// it owns in each channel it has sent to. Channel ids are never reused, so a
// stale entry (its channel gone) can never match.
inline std::atomic<uint64_t> next_channel_id{1};
inline std::atomic<uint64_t> next_sender_id{1};
inline thread_local uint64_t sender_id = 0;
struct LaneCacheEntry {
  uint64_t channel_id = 0;
  void* lane = nullptr;
};
inline constexpr int kLaneCacheSize = 64;
inline thread_local LaneCacheEntry lane_cache[kLaneCacheSize];
}  // namespace internal

// An unbounded many-senders, one-receiver queue.
//
// Every sending thread gets its own Lane (a single-producer single-consumer
// ring) the first time it sends, so a Send writes one slot and reads one
// mostly-unchanging word: no locked instruction and no cache line that other
// senders write. The receiver polls the lanes; items keep the order of each
// sender's Send calls. Past 63 senders, the remaining ones share the last
// lane under a lock. Lanes live as long as the channel.
//
// Parking and closing meet senders in one word, `state_`: a sender publishes
// its item, fences, and reads the word; the receiver sets `parked` (or sees
// `closed`), fences, and then looks at the lanes. So either the sender sees
// the bit or the receiver sees the item. The fence is asymmetric (see
// asymmetric_fence.h): nearly free for the sender, a system call for the
// receiver, which only parks after spinning and seals once. A Send that finds
// the channel closed only after publishing settles with the receiver through
// the lane's seal (see Lane): it reports kOk exactly when the item is received.
//
// One thread at a time may receive (Receive/ReceiveMany/TryReceiveMany).
// T must be default-constructible and move-assignable.
template <typename T>
class Channel {
 public:
  explicit Channel(ChannelOptions options = {})
      : options_(options),
        usable_cpus_(options.usable_cpus > 0 ? options.usable_cpus
                                             : ProcessUsableCpus().count),
        id_(internal::next_channel_id.fetch_add(1, std::memory_order_relaxed)),
        lane_capacity_(std::min<uint64_t>(RoundUp(options.reserve), 4096)) {
    if (options.reserve > 0) {
      // Unowned until the first sender adopts it.
      MutexLock lock(&lanes_mu_);
      AddLaneLocked(RoundUp(options.reserve), /*owner=*/0);
    }
  }
  ~Channel() = default;
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // kClosed after Close(); the item is then not queued.
  ChannelStatus Send(const T& item) { return Push(T(item)); }
  ChannelStatus Send(T&& item) { return Push(std::move(item)); }

  // Blocks until an item is available; kClosed once the channel is closed
  // and every item sent before the close has been received.
  ChannelStatus Receive(T* item) {
    while (true) {
      bool closed = false;
      if (Drain(
              1, [item](T&& v) { *item = std::move(v); }, &closed) > 0) {
        return ChannelStatus::kOk;
      }
      if (closed) return ChannelStatus::kClosed;
      WaitUntilNotEmpty();
    }
  }

  // Blocks until at least one item is available, then appends everything
  // queued to `items` (whose capacity is reused: no allocation once it has
  // grown). kClosed, with nothing appended, once closed and drained.
  ChannelStatus ReceiveMany(std::vector<T>* items) {
    while (true) {
      bool closed = false;
      if (TakeAll(items, &closed) > 0) return ChannelStatus::kOk;
      if (closed) return ChannelStatus::kClosed;
      // The parker ran work: the caller looks at its other queues.
      if (WaitUntilNotEmpty()) return ChannelStatus::kOk;
    }
  }

  // Appends everything queued now; never blocks. Returns how many.
  size_t TryReceiveMany(std::vector<T>* items) {
    bool closed = false;
    return TakeAll(items, &closed);
  }

  // Later sends report kClosed; the receiver still gets everything sent
  // before, then kClosed. Wakes a parked receiver. Idempotent.
  void Close() {
    state_.fetch_or(kClosedBit, std::memory_order_seq_cst);
    FutexWakeAll(&state_);
    if (ChannelParker* parker = parker_.load(std::memory_order_acquire)) {
      parker->Unpark();
    }
  }

  // Where the receiver parks from now on (null: the futex). The receiver's
  // thread only.
  std::atomic<ChannelParker*>* parker_slot() { return &parker_; }

  bool closed() const {
    return (state_.load(std::memory_order_acquire) & kClosedBit) != 0;
  }

  // Observability for tests and benchmarks.
  bool receiver_parked() const {
    return (state_.load(std::memory_order_acquire) & kParkedBit) != 0;
  }
  uint64_t wake_count() const { return wakes_.load(std::memory_order_relaxed); }
  // Slots allocated over all lanes: each lane's high-water mark of queued
  // items, rounded up to a power of two (at least 64).
  uint64_t capacity() const { return slots_.load(std::memory_order_relaxed); }

 private:
  static constexpr uint32_t kParkedBit = 1;
  static constexpr uint32_t kClosedBit = 2;
  static constexpr int kMaxLanes = 64;
  // Per lane and call, so that a sender that keeps up cannot hold the
  // receiver in its lane forever.
  static constexpr uint64_t kMaxPerLane = 4096;

  struct SenderLane {
    SenderLane(uint64_t capacity, bool sealed, std::atomic<uint64_t>* slots,
               uint64_t owner, bool shared)
        : lane(capacity, sealed, slots), owner(owner), shared(shared) {}
    Lane<T> lane;
    uint64_t owner;     // guarded by lanes_mu_
    const bool shared;  // the last lane: senders take `mu` around a Send
    SpinMutex mu;
  };

  static uint64_t RoundUp(uint64_t n) {
    return std::bit_ceil(std::max<uint64_t>(n, 64));
  }

  ChannelStatus Push(T&& item) {
    if (state_.load(std::memory_order_acquire) & kClosedBit) {
      return ChannelStatus::kClosed;
    }
    SenderLane* sender = MyLane();
    uint32_t state = 0;
    bool delivered = true;
    auto publish = [&] {
      uint64_t position = sender->lane.Publish(std::move(item));
      // Pairs with the heavy fence in WaitUntilNotEmpty (parking) and in
      // SealAll (closing); see the class comment.
      LightFence();
      state = state_.load(std::memory_order_relaxed);
      if (state & kClosedBit) delivered = sender->lane.Settle(position);
    };
    if (sender->shared) {
      SpinMutexLock lock(&sender->mu);
      publish();
    } else {
      publish();
    }
    if ((state & kParkedBit) &&
        (state_.fetch_and(~kParkedBit, std::memory_order_seq_cst) &
         kParkedBit)) {
      wakes_.fetch_add(1, std::memory_order_relaxed);
      if (ChannelParker* parker = parker_.load(std::memory_order_acquire)) {
        parker->Unpark();
      } else {
        FutexWakeAll(&state_);
      }
      cpu_gate::NoteWoke();
    }
    return delivered ? ChannelStatus::kOk : ChannelStatus::kClosed;
  }

  SenderLane* MyLane() {
    internal::LaneCacheEntry& entry =
        internal::lane_cache[id_ % internal::kLaneCacheSize];
    if (entry.channel_id == id_) return static_cast<SenderLane*>(entry.lane);
    SenderLane* lane = RegisterSender();
    entry = {id_, lane};
    return lane;
  }

  // Finds or makes the calling thread's lane.
  __attribute__((noinline)) SenderLane* RegisterSender() {
    if (internal::sender_id == 0) {
      internal::sender_id =
          internal::next_sender_id.fetch_add(1, std::memory_order_relaxed);
    }
    const uint64_t me = internal::sender_id;
    MutexLock lock(&lanes_mu_);
    int n = num_lanes_.load(std::memory_order_relaxed);
    for (int i = 0; i < n; ++i) {
      if (lanes_[i]->owner == me) return lanes_[i].get();
    }
    if (n > 0 && lanes_[0]->owner == 0) {
      lanes_[0]->owner = me;  // the reserved lane
      return lanes_[0].get();
    }
    if (n == kMaxLanes) return lanes_[kMaxLanes - 1].get();
    return AddLaneLocked(lane_capacity_, me);
  }

  SenderLane* AddLaneLocked(uint64_t capacity, uint64_t owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lanes_mu_) {
    int n = num_lanes_.load(std::memory_order_relaxed);
    lanes_[n] = std::make_unique<SenderLane>(capacity, sealed_all_, &slots_,
                                             owner, n == kMaxLanes - 1);
    num_lanes_.store(n + 1, std::memory_order_release);
    return lanes_[n].get();
  }

  // Hands up to `max` items to `sink`, visiting the lanes round-robin.
  template <typename Sink>
  uint64_t TakeFromLanes(uint64_t max, Sink&& sink) {
    const int n = num_lanes_.load(std::memory_order_acquire);
    uint64_t taken = 0;
    for (int k = 0; k < n && taken < max; ++k) {
      int i = next_lane_ + k < n ? next_lane_ + k : next_lane_ + k - n;
      taken += lanes_[i]->lane.Take(std::min(max - taken, kMaxPerLane), sink);
    }
    if (n > 0) next_lane_ = next_lane_ + 1 < n ? next_lane_ + 1 : 0;
    return taken;
  }

  // Takes up to `max` items; if there are none and the channel is closed,
  // seals the lanes, takes what settled in, and sets *closed.
  template <typename Sink>
  uint64_t Drain(uint64_t max, Sink&& sink, bool* closed) {
    uint64_t taken = TakeFromLanes(max, sink);
    if (taken > 0) return taken;
    if ((state_.load(std::memory_order_seq_cst) & kClosedBit) == 0) return 0;
    SealAll();
    *closed = true;
    return TakeFromLanes(max, sink);
  }

  size_t TakeAll(std::vector<T>* items, bool* closed) {
    return Drain(
        std::numeric_limits<uint64_t>::max(),
        [items](T&& v) { items->push_back(std::move(v)); }, closed);
  }

  // Receiver, once it has seen the channel closed. Lanes made later are born
  // sealed.
  void SealAll() {
    {
      MutexLock lock(&lanes_mu_);
      if (!sealed_all_) {
        const int n = num_lanes_.load(std::memory_order_relaxed);
        for (int i = 0; i < n; ++i) lanes_[i]->lane.Seal();
        sealed_all_ = true;
      }
    }
    HeavyFence();
  }

  bool Ready() const {
    if (state_.load(std::memory_order_acquire) & kClosedBit) return true;
    const int n = num_lanes_.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      if (lanes_[i]->lane.MayHaveItem()) return true;
    }
    return false;
  }

  // Spins while a CPU is free for this thread (spin_wait.h), then parks.
  bool WaitUntilNotEmpty() {
    if (SpinWhileCpuFree([this] { return Ready(); }, options_.spin_ns,
                         usable_cpus_)) {
      return false;
    }
    cpu_gate::BeforePark();
    bool ran_work = false;
    while (true) {
      state_.fetch_or(kParkedBit, std::memory_order_seq_cst);
      HeavyFence();
      if (Ready()) break;
      if (ChannelParker* parker = parker_.load(std::memory_order_acquire)) {
        if (parker->Park()) {
          ran_work = true;
          break;
        }
      } else {
        FutexWait(&state_, kParkedBit);
      }
      if (Ready()) break;
    }
    state_.fetch_and(~kParkedBit, std::memory_order_relaxed);
    cpu_gate::AfterWake();
    return ran_work;
  }

  const ChannelOptions options_;
  const int usable_cpus_;
  const uint64_t id_;
  const uint64_t lane_capacity_;

  // Read by every Send; written when the receiver parks or wakes and on
  // Close.
  alignas(64) std::atomic<uint32_t> state_{0};
  alignas(64) std::atomic<uint64_t> wakes_{0};
  std::atomic<ChannelParker*> parker_{nullptr};
  std::atomic<uint64_t> slots_{0};

  // Receiver-private.
  alignas(64) int next_lane_ = 0;

  Mutex lanes_mu_;
  bool sealed_all_ ABSL_GUARDED_BY(lanes_mu_) = false;
  std::atomic<int> num_lanes_{0};
  // Written under lanes_mu_ before num_lanes_ publishes them; read without
  // it after that publication (a lane, once published, never changes place).
  std::unique_ptr<SenderLane> lanes_[kMaxLanes];
};

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_CHANNEL_H_
