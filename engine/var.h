#ifndef ACTORFLOW_ENGINE_VAR_H_
#define ACTORFLOW_ENGINE_VAR_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "engine/free_store.h"
#include "thread/spin_mutex.h"

namespace actorflow::engine {

struct OprBlock;

// Operations that a completion made runnable on a variable (all the reads
// now allowed, or one write).
using GrantList = absl::InlinedVector<OprBlock*, 8>;

// An engine variable: the ordering point for the operations that read and
// write it. Invariants, all under mu_:
//  - a write runs alone: write_running_ implies running_reads_ == 0;
//  - the queue holds, in push order, the operations not yet allowed to run;
//  - its head is a read only while a write runs (a completion grants every
//    read at the head at once), so reads pushed back to back run together.
//
// The queue is a ring of (block, read or write) entries inside the
// variable's first cache line while it holds a few, on the heap beyond:
// a completion finds whom to grant on the line it already holds for the
// lock, not in the waiting blocks (one cache miss each, one after another).
// A heap ring that empties is kept for the next burst, so that a steady
// stream of pushes allocates nothing.
// Nothing else shares that line: neighbouring variables are often in use
// on different cores at once.
class alignas(64) Var {
 public:
  // Writes completed so far (failed and skipped ones included).
  uint64_t version() const { return version_.load(std::memory_order_acquire); }
  // Its number (creation order, from 1) and the name it was given, which
  // profiles show.
  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }

 private:
  friend class Engine;
  Var(uint64_t id, std::string name) : id_(id), name_(std::move(name)) {}
  ~Var();
  Var(const Var&) = delete;
  Var& operator=(const Var&) = delete;
  static void* operator new(size_t size) {
    return FreeStore<Var>::Allocate(size);
  }
  static void operator delete(void* ptr, size_t size) {
    FreeStore<Var>::Free(ptr, size);
  }

  // True if `block` may run on this variable now; otherwise it is queued
  // and granted later by a completion. Inline: every push calls them once
  // per variable.
  bool AppendRead(OprBlock* block) {
    internal::SpinMutexLock lock(&mu_);
    if (!write_running_ && size_ == 0) {
      ++running_reads_;
      return true;
    }
    Enqueue(block, /*write=*/false);
    return false;
  }
  bool AppendWrite(OprBlock* block) {
    internal::SpinMutexLock lock(&mu_);
    if (!write_running_ && running_reads_ == 0 && size_ == 0) {
      write_running_ = true;
      return true;
    }
    Enqueue(block, /*write=*/true);
    return false;
  }
  // Appends to `granted` the operations this completion lets run. Inline,
  // like the appends: every completion calls them once per variable.
  void CompleteRead(GrantList* granted) {
    internal::SpinMutexLock lock(&mu_);
    --running_reads_;
    if (size_ != 0) GrantFromHead(granted);
  }
  void CompleteWrite(GrantList* granted, bool counts_version) {
    internal::SpinMutexLock lock(&mu_);
    write_running_ = false;
    // Written only here, under mu_: no read-modify-write needed.
    if (counts_version) {
      version_.store(version_.load(std::memory_order_relaxed) + 1,
                     std::memory_order_release);
    }
    if (size_ != 0) GrantFromHead(granted);
  }

  // Sets the error (keeping an earlier one). True if it was clear.
  bool SetError(const absl::Status& status);
  // Takes the error, leaving it clear. OK if none.
  absl::Status TakeError();
  absl::Status error();

  // A queue entry: the block's address with its lowest bit set for a
  // write (blocks are cache-line aligned).
  using Entry = uintptr_t;
  static constexpr uint32_t kInlineEntries = 4;

  Entry* entries() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return capacity_ == kInlineEntries ? ring_.inline_entries : ring_.heap;
  }
  void Enqueue(OprBlock* block, bool write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (size_ == capacity_) Grow();
    entries()[(head_ + size_) & (capacity_ - 1)] =
        reinterpret_cast<Entry>(block) | (write ? 1 : 0);
    ++size_;
  }
  void PopFront() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Grow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void GrantFromHead(GrantList* granted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The first cache line: everything a push or a completion touches.
  internal::SpinMutex mu_;
  bool write_running_ ABSL_GUARDED_BY(mu_) = false;
  // Set when DeleteVariable is pushed; later pushes on it are refused.
  std::atomic<bool> deleting_{false};
  int running_reads_ ABSL_GUARDED_BY(mu_) = 0;
  // The ring: `size_` entries from `head_`, in `capacity_` slots (a power
  // of two; kInlineEntries means the inline ones).
  uint32_t head_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t size_ ABSL_GUARDED_BY(mu_) = 0;
  uint32_t capacity_ ABSL_GUARDED_BY(mu_) = kInlineEntries;
  std::atomic<uint64_t> version_{0};
  union Ring {
    Entry inline_entries[kInlineEntries];
    Entry* heap;
  } ring_ ABSL_GUARDED_BY(mu_){};
  // Past the first line: the largest heap ring used so far, while the
  // inline slots are in use (null, or `spare_capacity_` entries); errors;
  // what profiles read.
  Entry* spare_ ABSL_GUARDED_BY(mu_) = nullptr;
  uint32_t spare_capacity_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  const uint64_t id_;
  const std::string name_;
};

using VarHandle = Var*;

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_VAR_H_
