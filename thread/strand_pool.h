#ifndef ACTORFLOW_THREAD_STRAND_POOL_H_
#define ACTORFLOW_THREAD_STRAND_POOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "thread/futex.h"
#include "thread/thread.h"
#include "thread/worker_pool.h"

namespace actorflow::internal {

// Streams that any of a few threads can run.
//
// When a plan's CPU streams outnumber the CPUs, a fixed map of streams to
// fewer threads can leave one thread more work than the others (three
// equal streams on two threads: two against one). A StrandPool runs its
// streams, its Strands, on `workers` threads of the project's pool
// (worker_pool.h) instead: a strand with messages waits in the pool's
// queues, and whichever worker is free runs a turn of it. A strand is run by
// one worker at a time and handles its messages exactly as a Thread's loop
// would, so a stream's acts stay one at a time and in order; a worker's turn on
// a strand happens-before the next turn (a queue's lock, or the channel's
// parking, orders them).
//
// A strand that runs out of messages parks its channel and leaves the
// worker; the Send (or Close) that finds it parked queues it again, exactly
// once (Channel::ParkUnlessReady). A turn is bounded (kTurnMessages, and
// kFairShare while other strands wait), so a strand that always has work
// does not keep the others waiting.
template <typename Msg>
class StrandPool;

template <typename Msg>
class Strand final : public Thread<Msg> {
 public:
  enum class TurnEnd { kParked, kMore, kDone };

  Strand(StreamKey key, MsgHandler<Msg>* handler, ChannelOptions options,
         StrandPool<Msg>* pool)
      : Thread<Msg>(key, handler, options), pool_(pool), parker_(this) {
    this->channel_.MakeStrandReceiver(&parker_);
  }
  ~Strand() override = default;

  DeviceKind device_kind() const override { return DeviceKind::kCpu; }
  // The pool starts and joins its workers; a strand has no thread of its
  // own.
  void Start() override {}
  void Stop() override { this->RequestStop(); }
  // The worker running the strand's stuck call is left to it (the pool
  // detaches it); the strand counts as finished from now on.
  void Abandon() override {
    this->abandoned_.store(true, std::memory_order_relaxed);
    this->RequestStop();
    pool_->Finished(this);
  }

 private:
  friend class StrandPool<Msg>;
  // A turn ends after kTurnMessages, or after kFairShare once other strands
  // wait for a worker: a strand that never runs dry (a source whose
  // registers keep coming back) must not hold a worker from them.
  static constexpr int kTurnMessages = 256;
  static constexpr int kFairShare = 32;

  class Parker final : public ChannelParker {
   public:
    explicit Parker(Strand* strand) : strand_(strand) {}
    bool Park() override { return false; }  // a strand never blocks
    void Unpark() override { strand_->pool_->Push(strand_); }

   private:
    Strand* const strand_;
  };

  // On a pool worker, never on two at once.
  TurnEnd RunTurn() {
    thread_internal::current_thread = this;
    channel_internal::strand_sender = &sender_;
    const TurnEnd end = Turn();
    channel_internal::strand_sender = nullptr;
    thread_internal::current_thread = nullptr;
    return end;
  }

  TurnEnd Turn() {
    int handled = 0;
    while (handled < kTurnMessages) {
      // Strands wait for a worker: give way once this one had its share.
      if (handled >= kFairShare && pool_->strands_waiting()) break;
      while (!this->local_.empty()) {
        if (this->abandoned()) return TurnEnd::kDone;
        this->HandleLocal(this->local_.Pop());
        ++handled;
      }
      this->batch_.clear();
      bool closed = false;
      if (this->channel_.TryReceiveMany(&this->batch_, &closed) == 0) {
        if (closed) return TurnEnd::kDone;
        if (this->channel_.ParkUnlessReady()) return TurnEnd::kParked;
        continue;
      }
      for (const Msg& msg : this->batch_) {
        if (this->abandoned()) return TurnEnd::kDone;
        this->HandleReceived(msg);
        ++handled;
      }
    }
    return TurnEnd::kMore;
  }

  StrandPool<Msg>* const pool_;
  Parker parker_;
  // What the strand sends goes through its own lanes, whichever worker
  // runs it, so that it keeps its order (channel_internal::SenderIdentity).
  channel_internal::SenderIdentity sender_;
  // Set once by Finished: the strand was counted out of the pool's live
  // strands.
  std::atomic<bool> finished_{false};
};

template <typename Msg>
class StrandPool {
 public:
  // `usable_cpus` and `spin_ns` govern how idle workers wait (spin_wait.h).
  // `name` names the worker threads (worker_pool.h).
  StrandPool(int workers, int usable_cpus, int64_t spin_ns, std::string name)
      : workers_(workers),
        wait_{.spin_ns = spin_ns, .usable_cpus = usable_cpus},
        name_(std::move(name)) {}
  ~StrandPool() { Join(); }
  StrandPool(const StrandPool&) = delete;
  StrandPool& operator=(const StrandPool&) = delete;

  // Before Start. The pool does not own the strand, which must outlive it
  // (or its Join).
  std::unique_ptr<Strand<Msg>> NewStrand(StreamKey key,
                                         MsgHandler<Msg>* handler,
                                         ChannelOptions options) {
    auto strand = std::make_unique<Strand<Msg>>(key, handler, options, this);
    strands_.push_back(strand.get());
    live_.fetch_add(1, std::memory_order_relaxed);
    return strand;
  }

  // Starts the workers, then parks every strand (queueing those that were
  // sent something already). Call once.
  void Start() {
    running_.reset(new std::atomic<Strand<Msg>*>[workers_]);
    for (int i = 0; i < workers_; ++i) {
      running_[i].store(nullptr, std::memory_order_relaxed);
    }
    pool_ = std::make_unique<WorkerPool<Runner>>(
        Runner{this}, workers_, WorkerPool<Runner>::Order::kFifo, name_, wait_);
    for (Strand<Msg>* strand : strands_) {
      if (!strand->channel_.ParkUnlessReady()) Push(strand);
    }
  }

  // Waits until every strand has finished, which takes a RequestStop on
  // each (a closed strand finishes once it has handled everything sent
  // before), then joins the workers. A worker still inside an abandoned
  // strand's call is detached instead: whoever owns the pool must then
  // never destroy it. Idempotent.
  void Join() {
    if (pool_ == nullptr) return;  // never started
    while (true) {
      const uint32_t seen = progress_.load(std::memory_order_acquire);
      if (live_.load(std::memory_order_acquire) == 0) break;
      FutexWait(&progress_, seen);
    }
    // Every strand has finished: a worker inside one now is inside an
    // abandoned strand's call, or about to leave it.
    pool_->Stop([this](int index) {
      Strand<Msg>* strand = running_[index].load(std::memory_order_acquire);
      return strand != nullptr && strand->abandoned();
    });
  }

  // Queues `strand` to be run: from its channel's parker, or from the
  // worker whose turn ended with messages left. Any thread, after Start.
  void Push(Strand<Msg>* strand) { pool_->Push(strand); }

  // Counts `strand` out of the live ones, once: it handled its last
  // message, or it was abandoned.
  void Finished(Strand<Msg>* strand) {
    if (strand->finished_.exchange(true, std::memory_order_acq_rel)) return;
    if (live_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      progress_.fetch_add(1, std::memory_order_release);
      FutexWakeAll(&progress_);
    }
  }

  int workers() const { return workers_; }
  // Whether strands wait for a worker now.
  bool strands_waiting() const { return pool_->ItemsWaiting(); }

 private:
  // A turn of a strand per item; no bypass (a strand a turn wakes waits
  // its turn behind the strands queued before it).
  struct Runner {
    using Item = Strand<Msg>*;
    struct Worker {
      Worker(const Runner&, int index) : index(index) {}
      const int index;
    };
    static constexpr bool kBypass = false;
    void Run(Strand<Msg>* strand, Worker* worker) {
      pool->RunTurn(strand, worker->index);
    }
    void Idle(Worker*) {}
    static bool RunsLater(Item, Item) { return false; }

    StrandPool* pool;
  };

  // On worker `index`.
  void RunTurn(Strand<Msg>* strand, int index) {
    running_[index].store(strand, std::memory_order_release);
    const typename Strand<Msg>::TurnEnd end = strand->RunTurn();
    running_[index].store(nullptr, std::memory_order_release);
    if (end == Strand<Msg>::TurnEnd::kMore) {
      Push(strand);
    } else if (end == Strand<Msg>::TurnEnd::kDone) {
      Finished(strand);
    }
  }

  const int workers_;
  const WorkerWait wait_;
  const std::string name_;
  std::vector<Strand<Msg>*> strands_;  // fixed after Start
  std::atomic<int> live_{0};           // strands not yet finished
  // Bumped when the last strand finishes (Join waits on it).
  std::atomic<uint32_t> progress_{0};
  // Per worker: the strand it runs now, or null.
  std::unique_ptr<std::atomic<Strand<Msg>*>[]> running_;
  // Last: its workers are stopped before the members they read go.
  std::unique_ptr<WorkerPool<Runner>> pool_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_STRAND_POOL_H_
