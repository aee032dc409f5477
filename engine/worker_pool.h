#ifndef ACTORFLOW_ENGINE_WORKER_POOL_H_
#define ACTORFLOW_ENGINE_WORKER_POOL_H_

#include <cstdint>

#include "engine/engine.h"
#include "engine/opr.h"
#include "engine/stream_set.h"
#include "thread/worker_pool.h"

namespace actorflow::engine {

// How the engine's workers run its ready operations on the project's pool
// (thread/worker_pool.h): each worker owns its CUDA streams (StreamSet) and
// counts its completions before it applies them (DeferFinish). A worker
// runs the first operation its own completion makes ready next (bypass):
// a dependency chain then costs no lock and no cache-line transfer.
struct OprRunner {
  using Item = OprBlock*;
  struct Worker {
    Worker(const OprRunner& runner, int) : engine(runner.engine) {}
    Engine* const engine;
    StreamSet streams;
    int64_t deferred_finishes = 0;  // DeferFinish, not yet applied
  };
  static constexpr bool kBypass = true;

  void Run(OprBlock* block, Worker* worker) {
    engine->Execute(block, &worker->streams);
  }
  // Applies the worker's deferred completions (Engine::FinishMany) before
  // it looks for work in vain, so the engine's pending count reaches zero no
  // later than the workers run out of work.
  void Idle(Worker* worker) {
    if (worker->deferred_finishes == 0) return;
    const int64_t count = worker->deferred_finishes;
    worker->deferred_finishes = 0;
    engine->FinishMany(count);
  }
  // Priority pools: higher priority first, then earlier push.
  static bool RunsLater(const OprBlock* a, const OprBlock* b) {
    if (a->priority != b->priority) return a->priority < b->priority;
    return a->seq > b->seq;
  }

  Engine* engine;
};

using WorkerPool = internal::WorkerPool<OprRunner>;

// On a worker of `engine`, counts one completion in the worker and returns
// true; the worker applies its count before it waits (OprRunner::Idle). A
// completion on a worker then writes no cache line that the pushing thread
// reads. False elsewhere: apply it now.
bool DeferFinish(const Engine* engine);

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_WORKER_POOL_H_
