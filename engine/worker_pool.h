#ifndef ACTORFLOW_ENGINE_WORKER_POOL_H_
#define ACTORFLOW_ENGINE_WORKER_POOL_H_

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "thread/mutex.h"
#include "thread/ring_queue.h"

namespace actorflow {

class Engine;
struct OprBlock;

// Engine workers sharing one queue of ready operations, taken FIFO or
// highest priority first (push order among equals). Each worker owns its
// CUDA streams (StreamSet). An idle worker spins briefly before it sleeps,
// and a push wakes a worker only when one sleeps: under load no system call
// is made per operation.
class WorkerPool {
 public:
  enum class Order { kFifo, kPriority };

  // `name` names its workers in profiles: "<name> 0", "<name> 1", ...
  WorkerPool(Engine* engine, int num_threads, Order order, std::string name);
  // Joins the workers. The engine has drained the queue before this.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void Push(OprBlock* block);
  int size() const { return static_cast<int>(workers_.size()); }

  // The calling thread's worker name, or null off the engine's workers.
  static const std::string* CurrentWorkerName();

 private:
  void WorkerLoop(const std::string* name);
  // Takes the next block or returns null once stopping and empty.
  OprBlock* Take();
  OprBlock* PopLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  Engine* const engine_;
  const Order order_;
  Mutex mu_;
  CondVar wake_;
  RingQueue<OprBlock*> fifo_ ABSL_GUARDED_BY(mu_);    // kFifo
  std::vector<OprBlock*> heap_ ABSL_GUARDED_BY(mu_);  // kPriority
  int sleepers_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<int64_t> queued_{0};  // read unlocked by spinning workers
  std::vector<std::string> names_;  // one per worker, fixed before they start
  std::vector<std::thread> workers_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ENGINE_WORKER_POOL_H_
