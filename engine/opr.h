#ifndef ACTORFLOW_ENGINE_OPR_H_
#define ACTORFLOW_ENGINE_OPR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "base/mutex.h"
#include "engine/context.h"
#include "engine/engine.h"
#include "engine/free_store.h"
#include "engine/var.h"

namespace actorflow::engine {

// A pushable function with its variables, deduplicated: a variable listed
// twice, or both read and written, appears once, among the written ones.
// Two cache lines: the first holds what running it reads (the function,
// its property, the count of its variables), the second up to eight
// variables (more go on the heap). A name, which only errors and profiles
// read, is kept apart, so that an unnamed push writes and reads no line for
// it.
class alignas(64) Opr {
 public:
  // Takes `fn` and `name` by reference: a push moves them in once.
  Opr(AsyncFn&& fn, const std::vector<VarHandle>& const_vars,
      const std::vector<VarHandle>& mutable_vars, FnProperty prop,
      std::string&& name);
  ~Opr();
  Opr(const Opr&) = delete;
  Opr& operator=(const Opr&) = delete;

  const AsyncFn fn;
  const FnProperty prop;
  // Internal operations (WaitForVar, DeleteVariable) are not refused while
  // shutting down, and always run.
  bool internal = false;
  // False for WaitForVar's operation: it writes its variable only to wait
  // for every earlier reader too, and is not a write the user made.
  bool counts_version = true;

  // The name it was pushed with; empty if none.
  const std::string& name() const;

  // Every variable, the read ones first, each once; sorted within each part.
  absl::Span<const VarHandle> vars() const { return {data(), num_vars_}; }
  absl::Span<const VarHandle> const_vars() const {
    return {data(), num_const_};
  }
  absl::Span<const VarHandle> mutable_vars() const {
    return {data() + num_const_, size_t{num_vars_} - num_const_};
  }
  // Whether vars()[i] is written.
  bool writes(size_t i) const { return i >= num_const_; }

  static void* operator new(size_t size) {
    return FreeStore<Opr>::Allocate(size);
  }
  static void operator delete(void* ptr, size_t size) {
    FreeStore<Opr>::Free(ptr, size);
  }

  // The user's handle, if any, plus one per block in flight; the last
  // release frees. A new Opr holds one reference, its creator's.
  void Ref() { refs_.fetch_add(1, std::memory_order_relaxed); }
  void Unref() {
    // The only holder need not write the count (a one-shot push's block):
    // nobody without a reference can take one.
    if (refs_.load(std::memory_order_acquire) == 1 ||
        refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      delete this;
    }
  }

 private:
  static constexpr uint32_t kInlineVars = 8;
  // A name, in recycled memory like the Opr (a named push allocates
  // nothing either).
  struct Name {
    std::string text;
    static void* operator new(size_t size) {
      return FreeStore<Name>::Allocate(size);
    }
    static void operator delete(void* ptr, size_t size) {
      FreeStore<Name>::Free(ptr, size);
    }
  };

  const VarHandle* data() const {
    return heap_vars_ != nullptr ? heap_vars_ : inline_vars_;
  }

  std::atomic<int> refs_{1};
  uint32_t num_const_ = 0;
  uint32_t num_vars_ = 0;
  VarHandle* heap_vars_ = nullptr;  // more than kInlineVars
  Name* name_ = nullptr;            // null: unnamed
  alignas(64) VarHandle inline_vars_[kInlineVars];
};

// Signalled when one block completes (NaiveEngine's push, WaitForVar).
struct BlockWaiter {
  internal::Mutex mu;
  internal::CondVar cv;
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

// One push of an Opr and its dependency count; the variables' queues hold
// it until they grant it. One cache line, which a completion granting it
// and the worker running it touch: a block crosses cores several times in
// its life, and each extra line is one more transfer each time.
struct alignas(64) OprBlock {
  OprBlock(Opr* opr, Context ctx, int priority);
  static void* operator new(size_t size) {
    return FreeStore<OprBlock>::Allocate(size);
  }
  static void operator delete(void* ptr, size_t size) {
    FreeStore<OprBlock>::Free(ptr, size);
  }

  // Variables not yet granted, plus one that Submit holds until every
  // variable has been asked: whoever takes it to zero makes it ready.
  std::atomic<int> wait;
  // 2 * (live CallbackOnComplete copies). The last copy's release frees
  // the block, so a late copy never sees freed memory; finding `completed`
  // unset then, it knows the callback was dropped uncalled, and completes
  // it first. A completion does not touch the count: it runs through a
  // live copy. Starts with Engine::Execute's two copies counted (kRunRefs):
  // a block runs through Execute at most once, and one completed without
  // running (CompleteUnrun) drops them and is freed there.
  static constexpr int kRunRefs = 4;
  std::atomic<int> refs{kRunRefs};
  Opr* const opr;
  const Context ctx;
  std::unique_ptr<BlockProfile> profile;  // profiled pushes only
  // The Opr's, copied so that making the block ready and dispatching it
  // read only this line.
  const FnProperty prop;
  const bool internal;
  std::atomic<bool> completed{false};
  // In its variables' queues; a push refused up front never is.
  bool submitted = false;
  BlockWaiter* waiter = nullptr;
  uint64_t seq = 0;  // push order (set by Submit); breaks priority ties FIFO
  const int priority;
};

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_OPR_H_
