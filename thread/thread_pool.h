#ifndef ACTORFLOW_THREAD_THREAD_POOL_H_
#define ACTORFLOW_THREAD_THREAD_POOL_H_

#include <functional>
#include <memory>
#include <utility>

#include "thread/worker_pool.h"

namespace actorflow::internal {

// Closures on the project's pool (thread/worker_pool.h), oldest first. For
// coarse work (MultiThreadLoop), not for the actor message path.
class ThreadPool {
 public:
  // num_threads < 1 is treated as 1.
  explicit ThreadPool(int num_threads);
  // Runs everything already scheduled, then joins the workers.
  ~ThreadPool() = default;
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> work) {
    pool_.Push(new std::function<void()>(std::move(work)));
  }
  int size() const { return pool_.size(); }

 private:
  // A closure runs once and is freed. No bypass: a closure scheduled from a
  // worker is queued, so one that waits for it cannot keep it from running.
  struct ClosureRunner {
    using Item = std::function<void()>*;
    struct Worker {
      Worker(const ClosureRunner&, int) {}
    };
    static constexpr bool kBypass = false;
    void Run(Item work, Worker*) {
      std::unique_ptr<std::function<void()>> owned(work);
      (*owned)();
    }
    void Idle(Worker*) {}
    static bool RunsLater(Item, Item) { return false; }
  };

  WorkerPool<ClosureRunner> pool_;
};

// One pool per process, with one worker per usable CPU, created on first
// use.
ThreadPool* DefaultThreadPool();

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_THREAD_POOL_H_
