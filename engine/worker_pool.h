#ifndef ACTORFLOW_ENGINE_WORKER_POOL_H_
#define ACTORFLOW_ENGINE_WORKER_POOL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "thread/ring_queue.h"
#include "thread/spin_mutex.h"

namespace actorflow::engine {

class Engine;
struct OprBlock;
class StreamSet;

// Engine workers and their ready operations. Each worker owns its CUDA
// streams (StreamSet).
//
// FIFO pools give each worker a queue of its own: a worker queues what its
// completions make ready on its own queue, a push from outside the pool
// goes to the workers' queues in turn, and an idle worker takes from its
// own queue first, then from the others' (oldest first everywhere). No
// lock is shared by every push and every take: a queue's small spin lock
// is contended only by its owner and a thief. Priority pools keep one
// heap, so that the highest priority anywhere runs first.
//
// An idle worker polls briefly, then parks on a condition variable; a push
// wakes one only when one is parked (a counter read, no system call, under
// load).
class WorkerPool {
 public:
  enum class Order { kFifo, kPriority };

  // `name` names its workers in profiles: "<name> 0", "<name> 1", ...
  WorkerPool(Engine* engine, int num_threads, Order order, std::string name);
  // Joins the workers. The engine has drained the queues before this.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Push(OprBlock* block);
  // Runs one queued block on the calling thread, which is not one of the
  // pool's workers (a thread blocked in Engine::WaitForAll lends itself, as
  // TBB's waiting thread does), and then what its completion makes ready
  // first, as a worker would; false if none was queued. Their profiles name
  // the worker "<name> waiter".
  bool RunOneQueued(StreamSet* streams);
  int size() const { return static_cast<int>(workers_.size()); }

  // The calling thread's worker name, or null off the engine's workers.
  static const std::string* CurrentWorkerName();

  // On a worker of `engine`, counts one completion in the worker and returns
  // true; the worker applies its count (Engine::FinishMany) before it
  // looks for work in vain, so pending_ reaches zero no later than the
  // workers run out of work. A completion on a worker then writes no cache
  // line that the pushing thread reads. False elsewhere: apply it now.
  static bool DeferFinish(const Engine* engine);

 private:
  struct alignas(64) Queue {
    internal::SpinMutex mu;
    // Blocks queued here: written under mu, read unlocked by idle workers
    // and thieves, so that an empty queue is passed over without taking
    // its lock (a lock is a write: it would pull the line from its owner).
    std::atomic<int64_t> size{0};
    internal::RingQueue<OprBlock*> fifo ABSL_GUARDED_BY(mu);
    std::vector<OprBlock*> heap ABSL_GUARDED_BY(mu);  // kPriority: queue 0
  };

  // Push's way through a queue, out of line so that keeping the block in
  // the pushing thread's `next` stays a few instructions.
  __attribute__((noinline)) void Enqueue(OprBlock* block);
  void WorkerLoop(int index);
  // Runs `block`, then what each completion kept for this thread (Push's
  // bypass), up to kMaxBypassStreak in a row: a worker's and a lending
  // waiter's way of running.
  void RunChain(OprBlock* block, StreamSet* streams);
  // Applies the calling worker's deferred completions.
  void FlushFinishes();
  // Takes the next block for worker `index`, or null once stopping and
  // every queue is empty.
  OprBlock* Take(int index);
  // One block from any queue, `index`'s first; null if all are empty.
  OprBlock* TryTake(int index);
  OprBlock* PopLocked(Queue& queue) ABSL_EXCLUSIVE_LOCKS_REQUIRED(queue.mu);
  // True if any queue holds a block.
  bool AnyQueued(std::memory_order order = std::memory_order_acquire) const;

  Engine* const engine_;
  const Order order_;
  const int usable_cpus_;  // the process's (actorflow/usable_cpus.h)
  std::vector<std::unique_ptr<Queue>> queues_;  // one per worker (kFifo)
  // Parking: a worker counts itself in `sleepers_` under park_mu_ before it
  // looks at the queues a last time; a push counts its block in its queue's
  // size before it reads `sleepers_` (both sequentially consistent, so one
  // of the two sees the other), and signals under park_mu_ if it sees a
  // sleeper, so the wake cannot fall between the look and the wait. Read
  // by every push, written only when a worker parks or is woken: a line of
  // its own.
  //
  // A push that signals takes the sleeper off `sleepers_` and counts it in
  // `signals_`, so the pushes after it make no system call while the woken
  // worker is on its way (on a loaded machine tens of microseconds, a
  // thousand signals in a wavefront run before). Invariant, under park_mu_:
  // sleepers_ + signals_ is the number of workers inside the parking wait.
  alignas(64) std::atomic<int> sleepers_{0};
  alignas(64) internal::Mutex park_mu_;
  internal::CondVar wake_;
  int signals_ ABSL_GUARDED_BY(park_mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(park_mu_) = false;
  std::vector<std::string> names_;  // one per worker, fixed before they start
  std::string waiter_name_;
  std::vector<std::thread> workers_;
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_WORKER_POOL_H_
