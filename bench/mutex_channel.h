#ifndef ACTORFLOW_BENCH_MUTEX_CHANNEL_H_
#define ACTORFLOW_BENCH_MUTEX_CHANNEL_H_

#include <condition_variable>
#include <mutex>
#include <queue>

namespace actorflow::internal::bench {

// The baseline: the channel most runtimes start with. Every receive that
// finds the queue empty parks on the condition variable, and every send
// notifies, so each message in a ping-pong costs a wake-up.
template <typename T>
class MutexChannel {
 public:
  void Send(const T& item) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push(item);
    }
    cv_.notify_one();
  }

  T Receive() {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait(lock, [this] { return !queue_.empty(); });
    T item = queue_.front();
    queue_.pop();
    return item;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::queue<T> queue_;
};

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_MUTEX_CHANNEL_H_
