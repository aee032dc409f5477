#ifndef ACTORFLOW_ENGINE_DISPATCHER_H_
#define ACTORFLOW_ENGINE_DISPATCHER_H_

#include <memory>

#include "engine/engine_options.h"
#include "engine/worker_pool.h"

namespace actorflow::engine {

class Engine;
struct OprBlock;

// Where an engine type runs its ready operations: the only part that differs
// between NaiveEngine, ThreadedEnginePooled and ThreadedEnginePerDevice.
// Destroying it joins its workers; the engine first waits until nothing is
// pending.
class Dispatcher {
 public:
  virtual ~Dispatcher() = default;

  // A ready operation (not kAsync): queue it on a worker, which calls
  // Engine::Execute. Any thread may call this.
  virtual void Dispatch(OprBlock* block) = 0;

  // Runs one queued CPU operation on the calling thread (one waiting in
  // Engine::WaitForAll, not a worker; `waiter` is its state as a worker);
  // false if there was none. GPU operations stay on their workers, which
  // own their streams.
  virtual bool RunOneQueued(OprRunner::Worker* waiter) { return false; }

  // NaiveEngine: every operation runs inline and Push waits for it.
  virtual bool runs_on_caller() const { return false; }
};

std::unique_ptr<Dispatcher> MakeNaiveDispatcher();
std::unique_ptr<Dispatcher> MakePooledDispatcher(Engine* engine,
                                                 const EngineOptions& options);
std::unique_ptr<Dispatcher> MakePerDeviceDispatcher(
    Engine* engine, const EngineOptions& options);

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_DISPATCHER_H_
