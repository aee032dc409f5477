// Must NOT compile under -Werror=thread-safety: ReadWithoutLock touches
// guarded state without its lock (see thread_safety_test.sh).
#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace actorflow::internal {

class Counter {
 public:
  int ReadWithoutLock() const { return count_; }

 private:
  mutable Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace actorflow::internal

int main() { return actorflow::internal::Counter().ReadWithoutLock(); }
