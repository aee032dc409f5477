#include <array>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "engine/dispatcher.h"
#include "engine/opr.h"
#include "engine/worker_pool.h"

namespace actorflow::engine {

namespace {

// One set of pools per device, created on the first operation for it:
// `kMaxDevices` slots, each published once under mu_.
class PoolTable {
 public:
  // `name(device)` names a device's pool ("cpu(0) worker").
  PoolTable(Engine* engine, int num_threads, WorkerPool::Order order,
            std::function<std::string(int)> name)
      : engine_(engine),
        num_threads_(num_threads),
        order_(order),
        name_(std::move(name)) {}

  // Inline: every dispatch asks; making the pool is out of line, so that
  // this is a load and a test.
  WorkerPool* For(int device) {
    WorkerPool* pool = slots_[device].load(std::memory_order_acquire);
    return pool != nullptr ? pool : Create(device);
  }

  // One queued block of any device's pool run on the caller.
  bool RunOneQueued(OprRunner::Worker* waiter) {
    const int n = num_slots_.load(std::memory_order_acquire);
    for (int device = 0; device < n; ++device) {
      WorkerPool* pool = slots_[device].load(std::memory_order_acquire);
      if (pool != nullptr && pool->RunOneQueued(waiter)) return true;
    }
    return false;
  }

 private:
  // The device's pool, made on its first operation.
  __attribute__((noinline)) WorkerPool* Create(int device) {
    internal::MutexLock lock(&mu_);
    WorkerPool* pool = slots_[device].load(std::memory_order_relaxed);
    if (pool == nullptr) {
      owned_[device] = std::make_unique<WorkerPool>(
          OprRunner{engine_}, num_threads_, order_, name_(device));
      pool = owned_[device].get();
      slots_[device].store(pool, std::memory_order_release);
      if (device >= num_slots_.load(std::memory_order_relaxed)) {
        num_slots_.store(device + 1, std::memory_order_release);
      }
    }
    return pool;
  }

  Engine* const engine_;
  const int num_threads_;
  const WorkerPool::Order order_;
  const std::function<std::string(int)> name_;
  internal::Mutex mu_;
  std::array<std::atomic<WorkerPool*>, kMaxEngineDevices> slots_{};
  std::atomic<int> num_slots_{0};  // past the highest device with a pool
  std::array<std::unique_ptr<WorkerPool>, kMaxEngineDevices> owned_
      ABSL_GUARDED_BY(mu_);
};

// ThreadedEnginePerDevice: per CPU device a FIFO pool, one CPU priority pool,
// and per GPU device compute workers and copy workers, each worker with its
// own stream.
class PerDeviceDispatcher : public Dispatcher {
 public:
  PerDeviceDispatcher(Engine* engine, const EngineOptions& options)
      : cpu_(engine, options.cpu_worker_nthreads, WorkerPool::Order::kFifo,
             [](int d) { return Context::CPU(d).ToString() + " worker"; }),
        priority_(engine, options.cpu_priority_nthreads,
                  WorkerPool::Order::kPriority,
                  [](int) { return std::string("cpu priority"); }),
        gpu_compute_(
            engine, options.gpu_worker_nthreads, WorkerPool::Order::kFifo,
            [](int d) { return Context::GPU(d).ToString() + " compute"; }),
        gpu_copy_(engine, options.gpu_copy_nthreads, WorkerPool::Order::kFifo,
                  [](int d) { return Context::GPU(d).ToString() + " copy"; }) {}

  void Dispatch(OprBlock* block) override {
    const Context& ctx = block->ctx;
    FnProperty prop = block->prop;
    WorkerPool* pool;
    if (ctx.is_gpu()) {
      bool copy =
          prop == FnProperty::kCopyFromGPU || prop == FnProperty::kCopyToGPU;
      pool = (copy ? gpu_copy_ : gpu_compute_).For(ctx.dev_id);
    } else if (prop == FnProperty::kCPUPrioritized) {
      pool = priority_.For(0);
    } else {
      pool = cpu_.For(ctx.dev_id);
    }
    pool->Push(block);
  }

  bool RunOneQueued(OprRunner::Worker* waiter) override {
    return cpu_.RunOneQueued(waiter);
  }

 private:
  PoolTable cpu_;
  PoolTable priority_;  // slot 0 only
  PoolTable gpu_compute_;
  PoolTable gpu_copy_;
};

}  // namespace

std::unique_ptr<Dispatcher> MakePerDeviceDispatcher(
    Engine* engine, const EngineOptions& options) {
  return std::make_unique<PerDeviceDispatcher>(engine, options);
}

}  // namespace actorflow::engine
