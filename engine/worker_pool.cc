#include "engine/worker_pool.h"

namespace actorflow::engine {

bool DeferFinish(const Engine* engine) {
  OprRunner::Worker* worker = WorkerPool::CurrentWorker();
  if (worker == nullptr || worker->engine != engine) return false;
  ++worker->deferred_finishes;
  return true;
}

}  // namespace actorflow::engine
