#include "engine/worker_pool.h"

#include <sched.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "engine/engine.h"
#include "engine/opr.h"
#include "engine/stream_set.h"
#include "thread/cpu_relax.h"

namespace actorflow {

namespace {

// Some microseconds of polling before sleeping: long enough to catch the next
// push of a busy client, short enough not to steal a core from it for long.
constexpr int kSpinRounds = 1000;

// A worker runs the first operation its own completion makes ready next,
// without a trip through the shared queue (TBB calls this task bypass): the
// common case of a dependency chain then costs no lock and no cache-line
// transfer. Bounded, so that queued work is not passed over for long.
constexpr int kMaxBypassStreak = 64;

struct WorkerSlot {
  WorkerPool* pool = nullptr;  // the pool this thread works for
  const std::string* name = nullptr;
  OprBlock* next = nullptr;
  int streak = 0;
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
    : engine_(engine), order_(order) {
  num_threads = std::max(num_threads, 1);
  for (int i = 0; i < num_threads; ++i) {
    names_.push_back(absl::StrCat(name, " ", i));
  }
  workers_.reserve(num_threads);
  for (int i = 0; i < num_threads; ++i) {
    workers_.emplace_back([this, i] { WorkerLoop(&names_[i]); });
  }
}

const std::string* WorkerPool::CurrentWorkerName() { return t_worker.name; }

WorkerPool::~WorkerPool() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  wake_.SignalAll();
  for (std::thread& worker : workers_) worker.join();
}

void WorkerPool::Push(OprBlock* block) {
  WorkerSlot& slot = t_worker;
  if (order_ == Order::kFifo && slot.pool == this && slot.next == nullptr &&
      slot.streak < kMaxBypassStreak) {
    slot.next = block;
    return;
  }
  bool wake;
  {
    MutexLock lock(&mu_);
    if (order_ == Order::kFifo) {
      fifo_.Push(block);
    } else {
      heap_.push_back(block);
      std::push_heap(heap_.begin(), heap_.end(), RunsLater);
    }
    queued_.fetch_add(1, std::memory_order_release);
    wake = sleepers_ > 0;
  }
  if (wake) wake_.Signal();
}

OprBlock* WorkerPool::PopLocked() {
  OprBlock* block;
  if (order_ == Order::kFifo) {
    block = fifo_.Pop();
  } else {
    std::pop_heap(heap_.begin(), heap_.end(), RunsLater);
    block = heap_.back();
    heap_.pop_back();
  }
  queued_.fetch_sub(1, std::memory_order_relaxed);
  return block;
}

OprBlock* WorkerPool::Take() {
  for (int i = 1; i <= kSpinRounds; ++i) {
    if (queued_.load(std::memory_order_acquire) > 0) break;
    // With more busy threads than cores, the pusher we wait for may need
    // this core.
    if (i % 64 == 0) {
      sched_yield();
    } else {
      CpuRelax();
    }
  }
  MutexLock lock(&mu_);
  while (queued_.load(std::memory_order_relaxed) == 0) {
    if (stopping_) return nullptr;
    ++sleepers_;
    wake_.Wait(&mu_);
    --sleepers_;
  }
  return PopLocked();
}

void WorkerPool::WorkerLoop(const std::string* name) {
  StreamSet streams;
  WorkerSlot& slot = t_worker;
  slot.pool = this;
  slot.name = name;
  while (OprBlock* block = Take()) {
    slot.streak = 0;
    engine_->Execute(block, &streams);
    while (OprBlock* next = slot.next) {
      slot.next = nullptr;
      ++slot.streak;
      engine_->Execute(next, &streams);
    }
  }
}

}  // namespace actorflow
