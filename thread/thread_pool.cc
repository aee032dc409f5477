#include "thread/thread_pool.h"

#include <algorithm>
#include <utility>

#include "actorflow/usable_cpus.h"

namespace actorflow::internal {

ThreadPool::ThreadPool(int num_threads) {
  int n = std::max(num_threads, 1);
  workers_.reserve(n);
  for (int i = 0; i < n; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

ThreadPool::~ThreadPool() {
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  for (std::thread& worker : workers_) worker.join();
}

void ThreadPool::Schedule(std::function<void()> work) {
  {
    MutexLock lock(&mu_);
    queue_.push_back(std::move(work));
  }
  cv_.Signal();
}

void ThreadPool::WorkerLoop() {
  while (true) {
    std::function<void()> work;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
      // Drain before exiting: scheduled work is never dropped.
      if (queue_.empty()) return;
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

ThreadPool* DefaultThreadPool() {
  // Destroyed (and joined) at exit like any static.
  static ThreadPool pool(ProcessUsableCpus().count);
  return &pool;
}

}  // namespace actorflow::internal
