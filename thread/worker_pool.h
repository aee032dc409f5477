#ifndef ACTORFLOW_THREAD_WORKER_POOL_H_
#define ACTORFLOW_THREAD_WORKER_POOL_H_

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "actorflow/usable_cpus.h"
#include "base/mutex.h"
#include "thread/ring_queue.h"
#include "thread/spin_mutex.h"
#include "thread/spin_wait.h"

namespace actorflow::internal {

// How a pool's idle workers wait (thread/spin_wait.h).
struct WorkerWait {
  // Polling before parking, while a CPU is free for it: long enough to
  // catch the next push of a busy client, short enough not to take a core
  // from it for long.
  int64_t spin_ns = 30'000;
  int usable_cpus = 0;  // 0: the process's (actorflow/usable_cpus.h)
};

// The project's one pool of worker threads: a fixed set of workers and the
// items ready to run. What an item is and how it runs is the Runner's:
//
//   struct Runner {
//     using Item = T*;              // what the pool queues (a pointer)
//     struct Worker {               // one worker thread's own state
//       // index: 0 .. size() - 1; -1 for a thread that lends itself
//       // (RunOneQueued)
//       Worker(const Runner&, int index);
//     };
//     static constexpr bool kBypass = ...;  // see Push
//     void Run(Item item, Worker* worker);
//     // Before a worker waits for work it did not find.
//     void Idle(Worker* worker);
//     // kPriority pools: whether `a` runs after `b`.
//     static bool RunsLater(Item a, Item b);
//   };
//
// The engine's workers run its operations (engine/worker_pool.h);
// ThreadPool (thread_pool.h) runs closures; StrandPool (strand_pool.h) runs
// turns of the runtime's CPU streams.
//
// FIFO pools give each worker a queue of its own: a worker queues what it
// pushes on its own queue, a push from outside the pool goes to the
// workers' queues in turn, and an idle worker takes from its own queue
// first, then from the others' (oldest first everywhere). No lock is shared
// by every push and every take: a queue's small spin lock is contended only
// by its owner and a thief. Priority pools keep one heap, so that the
// highest priority anywhere runs first.
//
// An idle worker polls while a CPU is free for it (thread/spin_wait.h), then
// parks on a condition variable. A push wakes a parked worker only when
// none is polling (two counters read, no system call, under load); a worker
// that stops polling because it found work wakes the next one if more
// waits. So the workers woken are those that have work, one at a time, as
// Go's scheduler does. The destructor runs every queued item, then joins
// the workers.
template <typename Runner>
class WorkerPool {
 public:
  using Item = typename Runner::Item;
  using Worker = typename Runner::Worker;
  enum class Order { kFifo, kPriority };

  // `name` names its workers: "<name> 0", "<name> 1", ... (the first 15
  // characters are the OS thread's name too); num_threads < 1 is treated as
  // 1. The workers start at once.
  WorkerPool(Runner runner, int num_threads, Order order, std::string name,
             WorkerWait wait = {});
  // Stop with no worker stuck.
  ~WorkerPool() {
    Stop([](int) { return false; });
  }
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // With Runner::kBypass, an item pushed by the thread that runs this pool's
  // items (a worker, or a waiter in RunOneQueued) runs next on that thread,
  // without a trip through a queue (TBB calls this task bypass): the common
  // case of a dependency chain then costs no lock and no cache-line
  // transfer. Bounded (kMaxBypassStreak), so queued work is not passed over
  // for long.
  void Push(Item item);
  // Runs one queued item on the calling thread, which is not one of the
  // pool's workers (a thread blocked waiting for the pool lends itself, as
  // TBB's waiting thread does), and then what it pushes for bypass, as a
  // worker would; false if none was queued. CurrentWorkerName() reads
  // "<name> waiter" meanwhile.
  bool RunOneQueued(Worker* waiter);
  // Runs every queued item, then joins the workers, except each worker
  // `index` for which `stuck(index)` holds when its turn comes: it is inside
  // a call that does not return, and is detached. A detached worker still
  // reads the pool: whoever owns it must then never destroy it. Idempotent.
  template <typename Stuck>
  void Stop(Stuck&& stuck);
  // Whether items wait in a queue now (a relaxed look, for fairness).
  bool ItemsWaiting() const { return AnyQueued(std::memory_order_relaxed); }
  int size() const { return static_cast<int>(workers_.size()); }
  const Runner& runner() const { return runner_; }

  // The calling thread's worker name, or null off this kind of pool.
  static const std::string* CurrentWorkerName() { return t_slot.name; }
  // The calling thread's Worker while it is a worker of a pool of this
  // Runner type (not while it lends itself), else null.
  static Worker* CurrentWorker() { return t_slot.worker; }

 private:
  static constexpr int kMaxBypassStreak = 64;  // see Push

  struct alignas(64) Queue {
    SpinMutex mu;
    // Items queued here: written under mu, read unlocked by idle workers
    // and thieves, so that an empty queue is passed over without taking
    // its lock (a lock is a write: it would pull the line from its owner).
    std::atomic<int64_t> size{0};
    RingQueue<Item> fifo ABSL_GUARDED_BY(mu);
    std::vector<Item> heap ABSL_GUARDED_BY(mu);  // kPriority: queue 0
  };

  // The calling thread's part in a pool of this Runner type.
  struct Slot {
    WorkerPool* pool = nullptr;  // the pool this thread works for
    int index = -1;              // its worker index there
    Worker* worker = nullptr;
    const std::string* name = nullptr;
    Item next = nullptr;  // bypass: runs after the current item
    int streak = 0;
    // The pool whose pushes from this thread it may keep in `next` (a
    // worker's own; a waiter's while it lends itself), else null.
    WorkerPool* bypass = nullptr;
  };
  static inline thread_local Slot t_slot;

  // Push's way through a queue, out of line so that keeping the item in
  // the pushing thread's `next` stays a few instructions.
  __attribute__((noinline)) void Enqueue(Item item);
  void WorkerLoop(int index);
  // Runs `item`, then what it kept for this thread (bypass).
  void RunChain(Item item, Worker* worker);
  // The next item for worker `index`, or null once stopping and every queue
  // is empty.
  Item Take(int index, Worker* worker);
  // One item from any queue, `index`'s first; null if all are empty.
  Item TryTake(int index);
  Item PopLocked(Queue& queue) ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue.mu);
  bool AnyQueued(std::memory_order order = std::memory_order_acquire) const;
  // Signals one parked worker, if one is parked.
  void WakeOne();

  Runner runner_;
  const Order order_;
  const int64_t spin_ns_;
  const int usable_cpus_;
  std::vector<std::unique_ptr<Queue>> queues_;  // one per worker (kFifo)
  // Parking: a worker counts itself in `sleepers_` under park_mu_ before it
  // looks at the queues a last time; a push counts its item in its queue's
  // size before it reads `sleepers_` (both sequentially consistent, so one
  // of the two sees the other), and signals under park_mu_ if it sees a
  // sleeper, so the wake cannot fall between the look and the wait.
  //
  // Polling: a worker counts itself in `searching_` while it polls. A push
  // that sees a poller wakes no one; the poller, after it stops counting
  // itself (sequentially consistent, after the push's read), either finds
  // the item or looks at the queues once more before it parks, and a
  // poller that found work wakes a sleeper for what is left. So an item
  // queued while a worker is parked always has a worker on its way.
  //
  // Both counters are read by every push and written only when a worker
  // polls, parks or is woken: a line of their own.
  //
  // A push that signals takes the sleeper off `sleepers_` and counts it in
  // `signals_`, so the pushes after it make no system call while the woken
  // worker is on its way (on a loaded machine tens of microseconds, a
  // thousand signals in a wavefront run before). Invariant, under park_mu_:
  // sleepers_ + signals_ is the number of workers inside the parking wait.
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<int> searching_{0};
  alignas(64) Mutex park_mu_;
  CondVar wake_;
  int signals_ ABSL_GUARDED_BY(park_mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(park_mu_) = false;
  std::vector<std::string> names_;  // one per worker, fixed before they start
  std::string waiter_name_;
  std::vector<std::thread> workers_;
};

template <typename Runner>
WorkerPool<Runner>::WorkerPool(Runner runner, int num_threads, Order order,
                               std::string name, WorkerWait wait)
    : runner_(std::move(runner)),
      order_(order),
      spin_ns_(wait.spin_ns),
      usable_cpus_(wait.usable_cpus > 0 ? wait.usable_cpus
                                        : ProcessUsableCpus().count) {
  num_threads = std::max(num_threads, 1);
  const int num_queues = order == Order::kFifo ? num_threads : 1;
  for (int i = 0; i < num_queues; ++i) {
    queues_.push_back(std::make_unique<Queue>());
  }
  for (int i = 0; i < num_threads; ++i) {
    names_.push_back(absl::StrCat(name, " ", i));
  }
  waiter_name_ = absl::StrCat(name, " waiter");
  workers_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(i); });
  }
}

template <typename Runner>
template <typename Stuck>
void WorkerPool<Runner>::Stop(Stuck&& stuck) {
  {
    MutexLock lock(&park_mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  for (int i = 0; i < size(); ++i) {
    if (!workers_[i].joinable()) continue;
    if (stuck(i)) {
      workers_[i].detach();
    } else {
      workers_[i].join();
    }
  }
}

template <typename Runner>
void WorkerPool<Runner>::Push(Item item) {
  if constexpr (Runner::kBypass) {
    Slot& slot = t_slot;
    if (order_ == Order::kFifo && slot.bypass == this && slot.next == nullptr &&
        slot.streak < kMaxBypassStreak) {
      slot.next = item;
      return;
    }
  }
  Enqueue(item);
}

template <typename Runner>
void WorkerPool<Runner>::Enqueue(Item item) {
  Slot& slot = t_slot;
  if (order_ == Order::kFifo) {
    // From outside the pool, the workers' queues in turn (a counter per
    // pushing thread: pushers share nothing).
    thread_local uint32_t t_turn = static_cast<uint32_t>(
        std::hash<std::thread::id>()(std::this_thread::get_id()));
    const size_t n = queues_.size();
    const bool own = slot.pool == this;
    Queue& queue =
        *queues_[own ? static_cast<size_t>(slot.index) : t_turn++ % n];
    SpinMutexLock lock(&queue.mu);
    queue.fifo.Push(item);
    // Sequentially consistent with a parking worker's count and last look
    // (see sleepers_).
    queue.size.fetch_add(1, std::memory_order_seq_cst);
  } else {
    Queue& queue = *queues_[0];
    SpinMutexLock lock(&queue.mu);
    queue.heap.push_back(item);
    std::push_heap(queue.heap.begin(), queue.heap.end(), Runner::RunsLater);
    queue.size.fetch_add(1, std::memory_order_seq_cst);
  }
  if (sleepers_.load(std::memory_order_seq_cst) > 0 &&
      searching_.load(std::memory_order_seq_cst) == 0) {
    WakeOne();
  }
}

template <typename Runner>
void WorkerPool<Runner>::WakeOne() {
  {
    MutexLock lock(&park_mu_);
    if (sleepers_.load(std::memory_order_relaxed) == 0) return;
    sleepers_.fetch_sub(1, std::memory_order_relaxed);
    ++signals_;
    wake_.Signal();
  }
  cpu_gate::NoteWoke();
}

template <typename Runner>
typename WorkerPool<Runner>::Item WorkerPool<Runner>::PopLocked(Queue& queue) {
  Item item;
  if (order_ == Order::kFifo) {
    if (queue.fifo.empty()) return nullptr;
    item = queue.fifo.Pop();
  } else {
    if (queue.heap.empty()) return nullptr;
    std::pop_heap(queue.heap.begin(), queue.heap.end(), Runner::RunsLater);
    item = queue.heap.back();
    queue.heap.pop_back();
  }
  // Only written under the lock: no read-modify-write needed.
  queue.size.store(queue.size.load(std::memory_order_relaxed) - 1,
                   std::memory_order_relaxed);
  return item;
}

template <typename Runner>
bool WorkerPool<Runner>::AnyQueued(std::memory_order order) const {
  for (const std::unique_ptr<Queue>& queue : queues_) {
    if (queue->size.load(order) > 0) return true;
  }
  return false;
}

template <typename Runner>
typename WorkerPool<Runner>::Item WorkerPool<Runner>::TryTake(int index) {
  const int n = static_cast<int>(queues_.size());
  for (int k = 0; k < n; ++k) {
    Queue& queue = *queues_[(index + k) % n];
    if (queue.size.load(std::memory_order_acquire) == 0) continue;
    SpinMutexLock lock(&queue.mu);
    if (Item item = PopLocked(queue)) return item;
  }
  return nullptr;
}

template <typename Runner>
typename WorkerPool<Runner>::Item WorkerPool<Runner>::Take(int index,
                                                           Worker* worker) {
  const int own = order_ == Order::kFifo ? index : 0;
  bool searched = false;  // polled or parked since its last item
  while (true) {
    if (Item item = TryTake(own)) {
      // The pushes made while it polled woke no one (see searching_).
      if (searched && sleepers_.load(std::memory_order_seq_cst) > 0 &&
          searching_.load(std::memory_order_seq_cst) == 0 &&
          AnyQueued(std::memory_order_seq_cst)) {
        WakeOne();
      }
      return item;
    }
    runner_.Idle(worker);
    searched = true;
    searching_.fetch_add(1, std::memory_order_seq_cst);
    const bool found = SpinWhileCpuFree([this] { return AnyQueued(); },
                                        spin_ns_, usable_cpus_);
    searching_.fetch_sub(1, std::memory_order_seq_cst);
    // Take it, or poll again if a thief did.
    if (found) continue;
    MutexLock lock(&park_mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    cpu_gate::BeforePark();
    while (signals_ == 0 && !AnyQueued(std::memory_order_seq_cst) &&
           !stopping_) {
      wake_.Wait(&park_mu_);
    }
    cpu_gate::AfterWake();
    // Leaving: as a signalled worker if a signal is pending (whichever
    // worker it was meant for, the counts stay right), else as a sleeper.
    if (signals_ > 0) {
      --signals_;
    } else {
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
    }
    if (stopping_ && !AnyQueued()) return nullptr;
  }
}

template <typename Runner>
bool WorkerPool<Runner>::RunOneQueued(Worker* waiter) {
  // Oldest first from every queue, as a thief would; then, as a worker
  // does, what it pushes for bypass, before returning (handing that to a
  // worker's queue instead made the engine's wavefront some 10 ns per cell
  // slower, the waiter running a third or more of its operations).
  Item item = TryTake(0);
  if (item == nullptr) return false;
  Slot& slot = t_slot;
  const std::string* name = slot.name;
  slot.name = &waiter_name_;
  slot.bypass = this;
  RunChain(item, waiter);
  slot.bypass = nullptr;
  slot.name = name;
  return true;
}

template <typename Runner>
void WorkerPool<Runner>::WorkerLoop(int index) {
  // Counted as awake while it runs or spins (thread/spin_wait.h).
  struct Counted {
    Counted() { cpu_gate::Join(); }
    ~Counted() { cpu_gate::Leave(); }
  } counted;
  pthread_setname_np(pthread_self(), names_[index].substr(0, 15).c_str());
  Worker worker(runner_, index);
  Slot& slot = t_slot;
  slot.pool = this;
  slot.bypass = this;
  slot.index = index;
  slot.worker = &worker;
  slot.name = &names_[index];
  while (Item item = Take(index, &worker)) RunChain(item, &worker);
  slot = Slot();
}

template <typename Runner>
void WorkerPool<Runner>::RunChain(Item item, Worker* worker) {
  Slot& slot = t_slot;
  slot.streak = 0;
  runner_.Run(item, worker);
  if constexpr (Runner::kBypass) {
    while (Item next = slot.next) {
      slot.next = nullptr;
      ++slot.streak;
      runner_.Run(next, worker);
    }
  }
}

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_WORKER_POOL_H_
