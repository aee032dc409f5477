#ifndef ACTORFLOW_THREAD_CPU_RELAX_H_
#define ACTORFLOW_THREAD_CPU_RELAX_H_

namespace actorflow::internal {

// A hint inside spin loops: lets a sibling hyper-thread run and lowers power
// while we wait for another core to publish something.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield" ::: "memory");
#endif
}

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_CPU_RELAX_H_
