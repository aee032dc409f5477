// Compiles under -Werror=thread-safety: every access to guarded state holds
// its lock (see thread_safety_test.sh).
#include "absl/base/thread_annotations.h"
#include "base/mutex.h"
#include "thread/spin_mutex.h"

namespace actorflow::internal {

class Counter {
 public:
  void Add() {
    MutexLock lock(&mu_);
    ++count_;
    changed_.SignalAll();
  }
  void WaitFor(int n) {
    MutexLock lock(&mu_);
    while (count_ < n) changed_.Wait(&mu_);
  }
  void AddSpin() {
    SpinMutexLock lock(&spin_);
    ++spins_;
  }

 private:
  Mutex mu_;
  CondVar changed_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
  SpinMutex spin_;
  int spins_ ABSL_GUARDED_BY(spin_) = 0;
};

}  // namespace actorflow::internal

int main() {
  actorflow::internal::Counter counter;
  counter.Add();
  counter.WaitFor(1);
  counter.AddSpin();
  return 0;
}
