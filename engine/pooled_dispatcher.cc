#include <thread>

#include "engine/dispatcher.h"
#include "engine/opr.h"
#include "engine/worker_pool.h"

namespace actorflow::engine {

namespace {

bool IsCopy(FnProperty prop) {
  return prop == FnProperty::kCopyFromGPU || prop == FnProperty::kCopyToGPU;
}

// ThreadedEnginePooled: every device shares one FIFO pool; copies go to a
// separate I/O pool so that they overlap compute.
class PooledDispatcher : public Dispatcher {
 public:
  PooledDispatcher(Engine* engine, const EngineOptions& options)
      : shared_(OprRunner{engine}, options.pool_nthreads,
                WorkerPool::Order::kFifo, "pool"),
        io_(OprRunner{engine}, 1, WorkerPool::Order::kFifo, "io") {}

  void Dispatch(OprBlock* block) override {
    (IsCopy(block->prop) ? io_ : shared_).Push(block);
  }

 private:
  WorkerPool shared_;
  WorkerPool io_;
};

}  // namespace

std::unique_ptr<Dispatcher> MakePooledDispatcher(Engine* engine,
                                                 const EngineOptions& options) {
  return std::make_unique<PooledDispatcher>(engine, options);
}

}  // namespace actorflow::engine
