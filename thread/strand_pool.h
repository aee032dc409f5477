#ifndef ACTORFLOW_THREAD_STRAND_POOL_H_
#define ACTORFLOW_THREAD_STRAND_POOL_H_

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "thread/futex.h"
#include "thread/spin_wait.h"
#include "thread/thread.h"

namespace actorflow::internal {

// Streams that any of a few threads can run.
//
// When a plan's CPU streams outnumber the CPUs, a fixed map of streams to
// fewer threads can leave one thread more work than the others (three
// equal streams on two threads: two against one). A StrandPool runs its
// streams, its Strands, on `workers` threads instead: a strand with
// messages waits in the pool's ready queue, and whichever worker is free
// runs it. A strand is run by one worker at a time and handles its messages
// exactly as a Thread's loop would, so a stream's acts stay one at a time
// and in order; a worker's turn on a strand happens-before the next turn
// (the ready queue's lock orders them).
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
  // `name` names the worker threads (at most 15 characters are kept).
  StrandPool(int workers, int usable_cpus, int64_t spin_ns, std::string name)
      : workers_(workers),
        usable_cpus_(usable_cpus),
        spin_ns_(spin_ns),
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

  // Parks every strand (queueing those that were sent something already)
  // and starts the workers. Call once.
  void Start() {
    for (Strand<Msg>* strand : strands_) {
      if (!strand->channel_.ParkUnlessReady()) Push(strand);
    }
    running_.reset(new std::atomic<Strand<Msg>*>[workers_]);
    exited_.reset(new std::atomic<bool>[workers_]);
    for (int i = 0; i < workers_; ++i) {
      running_[i].store(nullptr, std::memory_order_relaxed);
      exited_[i].store(false, std::memory_order_relaxed);
    }
    for (int i = 0; i < workers_; ++i) {
      threads_.emplace_back([this, i] { Work(i); });
    }
  }

  // Waits until every strand has finished, which takes a RequestStop on
  // each (a closed strand finishes once it has handled everything sent
  // before), then joins the workers. A worker still inside an abandoned
  // strand's call is detached instead: whoever owns the pool must then
  // never destroy it. Idempotent.
  void Join() {
    for (int i = 0; i < static_cast<int>(threads_.size()); ++i) {
      if (!threads_[i].joinable()) continue;
      // Wait for this worker to leave the pool, or to be seen stuck in an
      // abandoned strand.
      while (true) {
        const uint32_t seen = progress_.load(std::memory_order_acquire);
        if (exited_[i].load(std::memory_order_acquire)) {
          threads_[i].join();
          break;
        }
        Strand<Msg>* strand = running_[i].load(std::memory_order_acquire);
        if (strand != nullptr && strand->abandoned()) {
          threads_[i].detach();
          break;
        }
        FutexWait(&progress_, seen);
      }
    }
  }

  // Queues `strand` to be run: from its channel's parker, or from the
  // worker whose turn ended with messages left. Any thread.
  void Push(Strand<Msg>* strand) {
    bool wake = false;
    {
      MutexLock lock(&mu_);
      ready_.push_back(strand);
      queued_.store(ready_.size(), std::memory_order_relaxed);
      // A worker that is looking for work will find it; a sleeper is woken
      // (tens of microseconds on a VM) only when none is.
      if (sleepers_ > 0 && searching_.load(std::memory_order_relaxed) == 0) {
        wake = true;
        wake_word_.fetch_add(1, std::memory_order_release);
      }
    }
    if (wake) {
      FutexWakeOne(&wake_word_);
      cpu_gate::NoteWoke();
    }
  }

  // Counts `strand` out of the live ones, once: it handled its last
  // message, or it was abandoned.
  void Finished(Strand<Msg>* strand) {
    if (strand->finished_.exchange(true, std::memory_order_acq_rel)) return;
    if (live_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      {
        MutexLock lock(&mu_);
        done_ = true;
        wake_word_.fetch_add(1, std::memory_order_release);
      }
      FutexWakeAll(&wake_word_);
    }
    // Join looks again (an abandoned strand's worker is now let go).
    progress_.fetch_add(1, std::memory_order_release);
    FutexWakeAll(&progress_);
  }

  int workers() const { return workers_; }
  // Whether strands wait in the ready queue now.
  bool strands_waiting() const {
    return queued_.load(std::memory_order_relaxed) > 0;
  }

 private:
  void Work(int index) {
    struct Counted {
      Counted() { cpu_gate::Join(); }
      ~Counted() { cpu_gate::Leave(); }
    } counted;
    thread_internal::current_parker_slot = nullptr;
    pthread_setname_np(
        pthread_self(),
        (name_ + "/" + std::to_string(index)).substr(0, 15).c_str());
    while (Strand<Msg>* strand = Pop(index)) {
      const typename Strand<Msg>::TurnEnd end = strand->RunTurn();
      running_[index].store(nullptr, std::memory_order_release);
      if (end == Strand<Msg>::TurnEnd::kMore) {
        Push(strand);
      } else if (end == Strand<Msg>::TurnEnd::kDone) {
        Finished(strand);
      }
    }
    exited_[index].store(true, std::memory_order_release);
    progress_.fetch_add(1, std::memory_order_release);
    FutexWakeAll(&progress_);
  }

  // The next strand to run, marked as run by worker `index`; null once
  // every strand has finished.
  Strand<Msg>* Pop(int index) {
    while (true) {
      uint32_t seen = 0;
      {
        MutexLock lock(&mu_);
        if (done_) return nullptr;
        if (!ready_.empty()) {
          Strand<Msg>* strand = ready_.front();
          ready_.pop_front();
          queued_.store(ready_.size(), std::memory_order_relaxed);
          running_[index].store(strand, std::memory_order_release);
          return strand;
        }
        seen = wake_word_.load(std::memory_order_relaxed);
      }
      searching_.fetch_add(1, std::memory_order_relaxed);
      const bool found = SpinWhileCpuFree(
          [this, seen] {
            return queued_.load(std::memory_order_relaxed) > 0 ||
                   wake_word_.load(std::memory_order_relaxed) != seen;
          },
          spin_ns_, usable_cpus_);
      searching_.fetch_sub(1, std::memory_order_relaxed);
      if (found) continue;
      {
        MutexLock lock(&mu_);
        if (done_ || !ready_.empty()) continue;
        ++sleepers_;
        seen = wake_word_.load(std::memory_order_relaxed);
      }
      cpu_gate::BeforePark();
      FutexWait(&wake_word_, seen);
      cpu_gate::AfterWake();
      MutexLock lock(&mu_);
      --sleepers_;
    }
  }

  const int workers_;
  const int usable_cpus_;
  const int64_t spin_ns_;
  const std::string name_;
  std::vector<Strand<Msg>*> strands_;  // fixed after Start
  std::vector<std::thread> threads_;
  // Per worker: the strand it runs now, or null.
  std::unique_ptr<std::atomic<Strand<Msg>*>[]> running_;
  std::atomic<int> live_{0};  // strands not yet finished
  // Per worker: whether it has left the pool for good.
  std::unique_ptr<std::atomic<bool>[]> exited_;
  // Bumped when a worker exits or a strand finishes (Join waits on it).
  std::atomic<uint32_t> progress_{0};

  Mutex mu_;
  std::deque<Strand<Msg>*> ready_ ABSL_GUARDED_BY(mu_);
  int sleepers_ ABSL_GUARDED_BY(mu_) = 0;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  // Workers spinning in Pop.
  std::atomic<int> searching_{0};
  // ready_.size(), for spinners to read without the lock.
  std::atomic<size_t> queued_{0};
  // Changes whenever a sleeping worker should look again.
  std::atomic<uint32_t> wake_word_{0};
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_STRAND_POOL_H_
