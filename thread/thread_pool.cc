#include "thread/thread_pool.h"

#include "actorflow/usable_cpus.h"

namespace actorflow::internal {

ThreadPool::ThreadPool(int num_threads)
    : pool_(ClosureRunner{}, num_threads,
            WorkerPool<ClosureRunner>::Order::kFifo, "pool") {}

ThreadPool* DefaultThreadPool() {
  // Destroyed (and joined) at exit like any static.
  static ThreadPool pool(ProcessUsableCpus().count);
  return &pool;
}

}  // namespace actorflow::internal
