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
#include "actorflow/channel_options.h"
#include "actorflow/usable_cpus.h"
#include "base/mutex.h"
#include "thread/asymmetric_fence.h"
#include "thread/cpu_relax.h"
#include "thread/futex.h"
#include "thread/lane.h"
#include "thread/spin_mutex.h"
#include "thread/spin_wait.h"

namespace actorflow::internal {

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

namespace channel_internal {
// A sender's identity, and its cache of the lane it owns in each channel it
// has sent to. Channel ids are never reused, so a stale entry (its channel
// gone) can never match.
inline std::atomic<uint64_t> next_channel_id{1};
inline std::atomic<uint64_t> next_sender_id{1};
struct LaneCacheEntry {
  uint64_t channel_id = 0;
  void* lane = nullptr;
};
inline constexpr int kLaneCacheSize = 64;
struct SenderIdentity {
  uint64_t id = 0;  // 0 until the first send
  LaneCacheEntry lane_cache[kLaneCacheSize];
};
// Each OS thread sends as itself, except while it runs a strand
// (strand_pool.h): a strand moves between threads, and its messages must
// keep their order, so they go through the strand's own lanes.
inline thread_local SenderIdentity thread_sender;
inline thread_local SenderIdentity* strand_sender = nullptr;
inline SenderIdentity* CurrentSender() {
  SenderIdentity* strand = strand_sender;
  return strand != nullptr ? strand : &thread_sender;
}
}  // namespace channel_internal

// An unbounded many-senders, one-receiver queue.
//
// Every sending thread (or strand, see channel_internal::SenderIdentity) gets
// its own Lane (a single-producer single-consumer ring) the first time it
// sends, so a Send writes one slot and reads one mostly-unchanging word: no
// locked instruction and no cache line that other senders write. The receiver
// polls the lanes; items keep the order of each sender's Send calls. Past 63
// senders, the remaining ones share the last lane under a lock. Lanes live as
// long as the channel.
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
        id_(channel_internal::next_channel_id.fetch_add(
            1, std::memory_order_relaxed)),
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
  // The same; *closed is set once the channel is closed and drained: then
  // nothing will ever arrive.
  size_t TryReceiveMany(std::vector<T>* items, bool* closed) {
    return TakeAll(items, closed);
  }

  // Makes the receiver a strand (strand_pool.h): it never blocks here, it
  // parks with ParkUnlessReady and returns, and the Send (or Close) that
  // finds it parked calls `parker->Unpark()` exactly once. A strand parks
  // whenever it runs out of messages, far too often for HeavyFence, so a
  // sender marks its lane in `pending_lanes_` (a locked instruction) and
  // the receiver looks only at the lanes marked. Call before any Send.
  void MakeStrandReceiver(ChannelParker* parker) {
    strand_receiver_ = true;
    parker_.store(parker, std::memory_order_release);
  }

  // Strand receivers: parks unless an item, or the close, is waiting. True
  // when parked: the receiver stops receiving, and is unparked by the next
  // Send or Close. False when it must go on receiving.
  bool ParkUnlessReady() {
    const uint32_t before =
        state_.fetch_or(kParkedBit, std::memory_order_seq_cst);
    // From the fetch_or on, a Send may unpark the strand and another thread
    // run it: look only at words read atomically.
    if ((before & kClosedBit) == 0 &&
        pending_lanes_.load(std::memory_order_seq_cst) == 0) {
      return true;
    }
    // Take the bit back, unless a sender (or Close) already did: that one
    // unparks, and the receiver must leave the channel to it.
    return (state_.fetch_and(~kParkedBit, std::memory_order_seq_cst) &
            kParkedBit) == 0;
  }

  // Later sends report kClosed; the receiver still gets everything sent
  // before, then kClosed. Wakes a parked receiver. Idempotent.
  void Close() {
    const uint32_t before =
        state_.fetch_or(kClosedBit, std::memory_order_seq_cst);
    if (strand_receiver_) {
      // Only a parked strand is unparked, and only once (ParkUnlessReady).
      if ((before & kParkedBit) &&
          (state_.fetch_and(~kParkedBit, std::memory_order_seq_cst) &
           kParkedBit)) {
        parker_.load(std::memory_order_acquire)->Unpark();
      }
      return;
    }
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
               uint64_t owner, bool shared, int index)
        : lane(capacity, sealed, slots),
          owner(owner),
          shared(shared),
          bit(uint64_t{1} << index) {}
    Lane<T> lane;
    uint64_t owner;      // guarded by lanes_mu_
    const bool shared;   // the last lane: senders take `mu` around a Send
    const uint64_t bit;  // in pending_lanes_
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
      if (strand_receiver_) {
        // The mark and the load are seq_cst, as are ParkUnlessReady's own
        // store and load: one of the two sides sees the other.
        pending_lanes_.fetch_or(sender->bit, std::memory_order_seq_cst);
        state = state_.load(std::memory_order_seq_cst);
      } else {
        // Pairs with the heavy fence in WaitUntilNotEmpty (parking) and in
        // SealAll (closing); see the class comment.
        LightFence();
        state = state_.load(std::memory_order_relaxed);
      }
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
      // A strand's pool says itself whether it woke a thread.
      if (!strand_receiver_) cpu_gate::NoteWoke();
    }
    return delivered ? ChannelStatus::kOk : ChannelStatus::kClosed;
  }

  SenderLane* MyLane() {
    channel_internal::SenderIdentity* sender =
        channel_internal::CurrentSender();
    channel_internal::LaneCacheEntry& entry =
        sender->lane_cache[id_ % channel_internal::kLaneCacheSize];
    if (entry.channel_id == id_) return static_cast<SenderLane*>(entry.lane);
    SenderLane* lane = RegisterSender(sender);
    entry = {id_, lane};
    return lane;
  }

  // Finds or makes the sender's lane.
  __attribute__((noinline)) SenderLane* RegisterSender(
      channel_internal::SenderIdentity* sender) {
    if (sender->id == 0) {
      sender->id = channel_internal::next_sender_id.fetch_add(
          1, std::memory_order_relaxed);
    }
    const uint64_t me = sender->id;
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
                                             owner, n == kMaxLanes - 1, n);
    num_lanes_.store(n + 1, std::memory_order_release);
    return lanes_[n].get();
  }

  // Hands up to `max` items to `sink`, visiting the lanes round-robin.
  template <typename Sink>
  uint64_t TakeFromLanes(uint64_t max, Sink&& sink) {
    if (strand_receiver_) return TakeFromMarkedLanes(max, sink);
    const int n = num_lanes_.load(std::memory_order_acquire);
    uint64_t taken = 0;
    for (int k = 0; k < n && taken < max; ++k) {
      int i = next_lane_ + k < n ? next_lane_ + k : next_lane_ + k - n;
      taken += lanes_[i]->lane.Take(std::min(max - taken, kMaxPerLane), sink);
    }
    if (n > 0) next_lane_ = next_lane_ + 1 < n ? next_lane_ + 1 : 0;
    return taken;
  }

  // A strand receiver's: only the lanes its senders marked since the last
  // look (after the exchange, a lane's later items mark it again). A lane
  // cut short by `max` stays marked.
  template <typename Sink>
  uint64_t TakeFromMarkedLanes(uint64_t max, Sink&& sink) {
    uint64_t marked = pending_lanes_.exchange(0, std::memory_order_seq_cst);
    // A sender's mark follows its lane's publication (SealAll marks all).
    const int n = num_lanes_.load(std::memory_order_acquire);
    if (n < 64) marked &= (uint64_t{1} << n) - 1;
    uint64_t taken = 0;
    while (marked != 0) {
      const int i = std::countr_zero(marked);
      marked &= marked - 1;
      Lane<T>& lane = lanes_[i]->lane;
      const uint64_t room = std::min(max - taken, kMaxPerLane);
      const uint64_t got = room == 0 ? 0 : lane.Take(room, sink);
      taken += got;
      if (got == room && lane.MayHaveItem()) {
        pending_lanes_.fetch_or(uint64_t{1} << i, std::memory_order_relaxed);
      }
    }
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
  // sealed. A strand's lanes are all looked at again.
  void SealAll() {
    if (strand_receiver_) {
      pending_lanes_.store(~uint64_t{0} >> (64 - kMaxLanes),
                           std::memory_order_seq_cst);
    }
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
  // Set before any Send (MakeStrandReceiver), then only read.
  bool strand_receiver_ = false;
  const uint64_t id_;
  const uint64_t lane_capacity_;

  // Read by every Send; written when the receiver parks or wakes and on
  // Close.
  alignas(64) std::atomic<uint32_t> state_{0};
  // Strand receivers: a bit per lane that may hold items (SenderLane::bit).
  alignas(64) std::atomic<uint64_t> pending_lanes_{0};
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

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_CHANNEL_H_
