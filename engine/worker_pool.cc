#include "engine/worker_pool.h"

#include "engine/engine.h"
#include "engine/opr.h"

namespace actorflow::engine {

void OprRunner::Run(OprBlock* block, Worker* worker) {
  engine->Execute(block, &worker->streams);
}

void OprRunner::Idle(Worker* worker) {
  if (worker->deferred_finishes == 0) return;
  const int64_t count = worker->deferred_finishes;
  worker->deferred_finishes = 0;
  engine->FinishMany(count);
}

bool OprRunner::RunsLater(const OprBlock* a, const OprBlock* b) {
  if (a->priority != b->priority) return a->priority < b->priority;
  return a->seq > b->seq;
}

bool DeferFinish(const Engine* engine) {
  OprRunner::Worker* worker = WorkerPool::CurrentWorker();
  if (worker == nullptr || worker->engine != engine) return false;
  ++worker->deferred_finishes;
  return true;
}

}  // namespace actorflow::engine
