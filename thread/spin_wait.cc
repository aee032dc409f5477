#include "thread/spin_wait.h"

#include <sys/resource.h>

namespace actorflow::internal::cpu_gate::detail {

bool SwitchedOutSinceLastLook(ThreadState* me) {
  rusage usage{};
  if (getrusage(RUSAGE_THREAD, &usage) != 0) return true;
  const int64_t switches = usage.ru_nivcsw;
  const bool switched =
      switches > std::max<int64_t>(me->involuntary_switches, 0);
  me->involuntary_switches = switches;
  return switched;
}

}  // namespace actorflow::internal::cpu_gate::detail
