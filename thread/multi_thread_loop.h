#ifndef ACTORFLOW_THREAD_MULTI_THREAD_LOOP_H_
#define ACTORFLOW_THREAD_MULTI_THREAD_LOOP_H_

#include <cstdint>
#include <functional>

#include "thread/thread_pool.h"

namespace actorflow::internal {

// Calls fn(i) for every i in [0, n), split into balanced contiguous ranges
// over the pool's workers and the calling thread, and returns when all calls
// have returned. The caller works too and takes any range no worker has
// started, so the loop finishes even when every worker is busy (for example
// when called from inside a pool task).
void MultiThreadLoop(int64_t n, const std::function<void(int64_t)>& fn,
                     ThreadPool* pool);

// Over DefaultThreadPool().
void MultiThreadLoop(int64_t n, const std::function<void(int64_t)>& fn);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_THREAD_MULTI_THREAD_LOOP_H_
