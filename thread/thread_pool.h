#ifndef ACTORFLOW_THREAD_THREAD_POOL_H_
#define ACTORFLOW_THREAD_THREAD_POOL_H_

#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace actorflow::internal {

// A fixed set of workers taking closures from one FIFO. For coarse work
// (MultiThreadLoop, engine workers), not for the actor message path.
class ThreadPool {
 public:
  // num_threads < 1 is treated as 1.
  explicit ThreadPool(int num_threads);
  // Runs everything already scheduled, then joins the workers.
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  void Schedule(std::function<void()> work);
  int size() const { return static_cast<int>(workers_.size()); }

 private:
  void WorkerLoop();

  Mutex mu_;
  CondVar cv_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
};

// One pool per process, with one worker per hardware thread, created on
// first use.
ThreadPool* DefaultThreadPool();

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_THREAD_POOL_H_
