#ifndef ACTORFLOW_THREAD_THREAD_POOL_H_
#define ACTORFLOW_THREAD_THREAD_POOL_H_

#include <condition_variable>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace actorflow {

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

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;  // guarded by mu_
  bool stopping_ = false;                    // guarded by mu_
  std::vector<std::thread> workers_;
};

// One pool per process, with one worker per hardware thread, created on
// first use.
ThreadPool* DefaultThreadPool();

}  // namespace actorflow

#endif  // ACTORFLOW_THREAD_THREAD_POOL_H_
