#ifndef ACTORFLOW_ENGINE_OPR_H_
#define ACTORFLOW_ENGINE_OPR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "base/mutex.h"
#include "engine/context.h"
#include "engine/engine.h"
#include "engine/free_store.h"
#include "engine/var.h"

namespace actorflow::engine {

// A pushable function with its variables, deduplicated: a variable listed
// twice, or both read and written, appears once, in mutable_vars.
class Opr {
 public:
  Opr(AsyncFn fn, const std::vector<VarHandle>& const_vars,
      const std::vector<VarHandle>& mutable_vars, FnProperty prop,
      std::string name);

  const AsyncFn fn;
  const FnProperty prop;
  const std::string name;
  absl::InlinedVector<VarHandle, 4> const_vars;
  absl::InlinedVector<VarHandle, 4> mutable_vars;

  static void* operator new(size_t size) {
    return FreeStore<Opr>::Allocate(size);
  }
  static void operator delete(void* ptr, size_t size) {
    FreeStore<Opr>::Free(ptr, size);
  }

  // The user's handle plus one per block in flight; the last release frees.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  // Internal operations (WaitForVar, DeleteVariable) are not refused while
  // shutting down, and always run.
  bool internal = false;
  // False for WaitForVar's operation: it writes its variable only to wait
  // for every earlier reader too, and is not a write the user made.
  bool counts_version = true;

 private:
  std::atomic<int> refs_{1};
};

// Signalled when one block completes (NaiveEngine's push, WaitForVar).
struct BlockWaiter {
  Mutex mu;
  CondVar cv;
  bool done ABSL_GUARDED_BY(mu) = false;

  void Notify();
  void Wait();
};

// What the profiler notes of one push while it is in flight; it becomes an
// OprRecord when the push completes. Only profiled pushes have one.
struct BlockProfile {
  int64_t queued_ns = 0;
  int64_t ready_ns = 0;
  int64_t started_ns = 0;
  const std::string* worker = nullptr;  // null: inline
  // Per entry of OprBlock::waits: when granted, and by whose completion
  // (its seq; -1: granted at push).
  absl::InlinedVector<int64_t, 6> granted_ns;
  absl::InlinedVector<int64_t, 6> granted_after;
  // GPU operations: timing events around its work on the worker's stream
  // (cuda::EventHandle; null where none could be made). The end is marked
  // when the function returns (PushSync) or else at completion.
  int device = -1;
  void* device_stream = nullptr;
  void* device_start = nullptr;
  void* device_end = nullptr;
};

// One push of an Opr: its dependency count and its places in the variables'
// queues.
struct OprBlock {
  OprBlock(Engine* engine, Opr* opr, Context ctx, int priority, uint64_t seq);
  static void* operator new(size_t size) {
    return FreeStore<OprBlock>::Allocate(size);
  }
  static void operator delete(void* ptr, size_t size) {
    FreeStore<OprBlock>::Free(ptr, size);
  }

  Engine* const engine;
  Opr* const opr;
  const Context ctx;
  const int priority;
  const uint64_t seq;  // push order, breaks priority ties FIFO
  // Variables not yet granted, plus one that Submit holds until every
  // variable has been asked: whoever takes it to zero makes it ready.
  std::atomic<int> wait;
  // const_vars' entries first, then mutable_vars'.
  absl::InlinedVector<VarWait, 6> waits;
  // 2 * (live CallbackOnComplete copies) + (1 until completion). Freed at
  // zero, so a late copy never sees freed memory; a copy's destructor that
  // leaves exactly 1 knows the callback was dropped uncalled.
  std::atomic<int> refs{1};
  std::atomic<bool> completed{false};
  BlockWaiter* waiter = nullptr;
  // In its variables' queues; a push refused up front never is.
  bool submitted = false;
  OprBlock* next_inline = nullptr;        // Engine::RunInline's queue
  std::unique_ptr<BlockProfile> profile;  // profiled pushes only
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_OPR_H_
