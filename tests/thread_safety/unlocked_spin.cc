// Must NOT compile under -Werror=thread-safety: a SpinMutex-guarded field
// written without SpinMutexLock (see thread_safety_test.sh).
#include "absl/base/thread_annotations.h"
#include "thread/spin_mutex.h"

namespace actorflow::internal {

class Counter {
 public:
  void AddWithoutLock() { ++count_; }

 private:
  SpinMutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace actorflow::internal

int main() {
  actorflow::internal::Counter().AddWithoutLock();
  return 0;
}
