#ifndef ACTORFLOW_THREAD_FUTEX_H_
#define ACTORFLOW_THREAD_FUTEX_H_

#include <atomic>
#include <cstdint>

namespace actorflow::internal {

// Parks the calling thread while `*word == expected`. May return spuriously:
// callers re-check their condition in a loop.
void FutexWait(std::atomic<uint32_t>* word, uint32_t expected);

// Wakes one thread parked on `word`, if any.
void FutexWakeOne(std::atomic<uint32_t>* word);

// Wakes every thread parked on `word`.
void FutexWakeAll(std::atomic<uint32_t>* word);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_FUTEX_H_
