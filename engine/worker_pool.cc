#include "engine/worker_pool.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "actorflow/usable_cpus.h"
#include "engine/engine.h"
#include "engine/opr.h"
#include "engine/stream_set.h"
#include "thread/spin_wait.h"

namespace actorflow::engine {

namespace {

// Some microseconds of polling before parking, while a CPU is free for it
// (thread/spin_wait.h): long enough to catch the next push of a busy
// client, short enough not to take a core from it for long.
constexpr int64_t kSpinNs = 30'000;

// A worker runs the first operation its own completion makes ready next,
// without a trip through a queue (TBB calls this task bypass): the common
// case of a dependency chain then costs no lock and no cache-line transfer.
// Bounded, so that queued work is not passed over for long.
constexpr int kMaxBypassStreak = 64;

struct WorkerSlot {
  WorkerPool* pool = nullptr;  // the pool this thread works for
  int index = -1;              // its worker index there
  const std::string* name = nullptr;
  OprBlock* next = nullptr;
  int streak = 0;
  // The pool whose pushes from this thread it may keep in `next` (a
  // worker's own; a waiter's while it lends itself), else null.
  WorkerPool* bypass = nullptr;
  int64_t deferred_finishes = 0;  // DeferFinish, not yet applied
};
thread_local WorkerSlot t_worker;

// Heap order: higher priority first, then earlier push.
bool RunsLater(const OprBlock* a, const OprBlock* b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  return a->seq > b->seq;
}

}  // namespace

WorkerPool::WorkerPool(Engine* engine, int num_threads, Order order,
                       std::string name)
    : engine_(engine), order_(order), usable_cpus_(ProcessUsableCpus().count) {
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

const std::string* WorkerPool::CurrentWorkerName() { return t_worker.name; }

bool WorkerPool::DeferFinish(const Engine* engine) {
  WorkerSlot& slot = t_worker;
  if (slot.pool == nullptr || slot.pool->engine_ != engine) return false;
  ++slot.deferred_finishes;
  return true;
}

void WorkerPool::FlushFinishes() {
  WorkerSlot& slot = t_worker;
  if (slot.deferred_finishes == 0) return;
  const int64_t count = slot.deferred_finishes;
  slot.deferred_finishes = 0;
  engine_->FinishMany(count);
}

WorkerPool::~WorkerPool() {
  {
    internal::MutexLock lock(&park_mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  for (std::thread& worker : workers_) worker.join();
}

void WorkerPool::Push(OprBlock* block) {
  WorkerSlot& slot = t_worker;
  if (order_ == Order::kFifo && slot.bypass == this && slot.next == nullptr &&
      slot.streak < kMaxBypassStreak) {
    slot.next = block;
    return;
  }
  Enqueue(block);
}

void WorkerPool::Enqueue(OprBlock* block) {
  WorkerSlot& slot = t_worker;
  if (order_ == Order::kFifo) {
    // From outside the pool, the workers' queues in turn (a counter per
    // pushing thread: pushers share nothing).
    thread_local uint32_t t_turn = static_cast<uint32_t>(
        std::hash<std::thread::id>()(std::this_thread::get_id()));
    const size_t n = queues_.size();
    const bool own = slot.pool == this;
    Queue& queue =
        *queues_[own ? static_cast<size_t>(slot.index) : t_turn++ % n];
    internal::SpinMutexLock lock(&queue.mu);
    queue.fifo.Push(block);
    // Sequentially consistent with a parking worker's count and last look
    // (see sleepers_).
    queue.size.fetch_add(1, std::memory_order_seq_cst);
  } else {
    Queue& queue = *queues_[0];
    internal::SpinMutexLock lock(&queue.mu);
    queue.heap.push_back(block);
    std::push_heap(queue.heap.begin(), queue.heap.end(), RunsLater);
    queue.size.fetch_add(1, std::memory_order_seq_cst);
  }
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    internal::MutexLock lock(&park_mu_);
    if (sleepers_.load(std::memory_order_relaxed) > 0) {
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      ++signals_;
      wake_.Signal();
    }
  }
}

OprBlock* WorkerPool::PopLocked(Queue& queue) {
  OprBlock* block;
  if (order_ == Order::kFifo) {
    if (queue.fifo.empty()) return nullptr;
    block = queue.fifo.Pop();
  } else {
    if (queue.heap.empty()) return nullptr;
    std::pop_heap(queue.heap.begin(), queue.heap.end(), RunsLater);
    block = queue.heap.back();
    queue.heap.pop_back();
  }
  // Only written under the lock: no read-modify-write needed.
  queue.size.store(queue.size.load(std::memory_order_relaxed) - 1,
                   std::memory_order_relaxed);
  return block;
}

bool WorkerPool::AnyQueued(std::memory_order order) const {
  for (const std::unique_ptr<Queue>& queue : queues_) {
    if (queue->size.load(order) > 0) return true;
  }
  return false;
}

OprBlock* WorkerPool::TryTake(int index) {
  const int n = static_cast<int>(queues_.size());
  for (int k = 0; k < n; ++k) {
    Queue& queue = *queues_[(index + k) % n];
    if (queue.size.load(std::memory_order_acquire) == 0) continue;
    internal::SpinMutexLock lock(&queue.mu);
    if (OprBlock* block = PopLocked(queue)) return block;
  }
  return nullptr;
}

OprBlock* WorkerPool::Take(int index) {
  const int own = order_ == Order::kFifo ? index : 0;
  while (true) {
    if (OprBlock* block = TryTake(own)) return block;
    // Out of work: what this worker completed must count before it waits.
    FlushFinishes();
    // Take it, or poll again if a thief did.
    if (internal::SpinWhileCpuFree([this] { return AnyQueued(); }, kSpinNs,
                                   usable_cpus_)) {
      continue;
    }
    internal::MutexLock lock(&park_mu_);
    sleepers_.fetch_add(1, std::memory_order_seq_cst);
    internal::cpu_gate::BeforePark();
    while (signals_ == 0 && !AnyQueued(std::memory_order_seq_cst) &&
           !stopping_) {
      wake_.Wait(&park_mu_);
    }
    internal::cpu_gate::AfterWake();
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

bool WorkerPool::RunOneQueued(StreamSet* streams) {
  // Oldest first from every queue, as a thief would. Then, as a worker
  // does, whatever the block's completion makes ready first (bounded the
  // same way), before returning: handing it to a worker's queue instead
  // made the wavefront some 10 ns per cell slower, the waiter running a
  // third or more of its operations. Other ready blocks go to the workers'
  // queues in turn, as from outside the pool.
  OprBlock* block = TryTake(0);
  if (block == nullptr) return false;
  WorkerSlot& slot = t_worker;
  const std::string* name = slot.name;
  slot.name = &waiter_name_;
  slot.bypass = this;
  RunChain(block, streams);
  slot.bypass = nullptr;
  slot.name = name;
  return true;
}

void WorkerPool::WorkerLoop(int index) {
  // Counted as awake while it runs or spins (thread/spin_wait.h).
  struct Counted {
    Counted() { internal::cpu_gate::Join(); }
    ~Counted() { internal::cpu_gate::Leave(); }
  } counted;
  StreamSet streams;
  WorkerSlot& slot = t_worker;
  slot.pool = this;
  slot.bypass = this;
  slot.index = index;
  slot.name = &names_[index];
  while (OprBlock* block = Take(index)) RunChain(block, &streams);
}

void WorkerPool::RunChain(OprBlock* block, StreamSet* streams) {
  WorkerSlot& slot = t_worker;
  slot.streak = 0;
  engine_->Execute(block, streams);
  while (OprBlock* next = slot.next) {
    slot.next = nullptr;
    ++slot.streak;
    engine_->Execute(next, streams);
  }
}

}  // namespace actorflow::engine
