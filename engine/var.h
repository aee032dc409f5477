#ifndef ACTORFLOW_ENGINE_VAR_H_
#define ACTORFLOW_ENGINE_VAR_H_

#include <atomic>
#include <cstdint>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "thread/spin_mutex.h"

namespace actorflow::engine {

struct OprBlock;

// One operation's place in one variable's queue. Lives inside its OprBlock.
struct VarWait {
  OprBlock* block = nullptr;
  bool write = false;
  VarWait* next = nullptr;
};

// Operations that a completion made runnable on a variable (all the reads
// now allowed, or one write).
using GrantList = absl::InlinedVector<OprBlock*, 8>;

// An engine variable: the ordering point for the operations that read and
// write it. Invariants, all under mu_:
//  - a write runs alone: write_running_ implies running_reads_ == 0;
//  - the queue holds, in push order, the operations not yet allowed to run;
//  - its head is a read only while a write runs (a completion grants every
//    read at the head at once), so reads pushed back to back run together.
class Var {
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

  // True if the operation may run on this variable now; otherwise it is
  // queued and granted later by a completion.
  bool AppendRead(VarWait* wait);
  bool AppendWrite(VarWait* wait);
  // Appends to `granted` the operations this completion lets run.
  void CompleteRead(GrantList* granted);
  void CompleteWrite(GrantList* granted, bool counts_version);

  // Sets the error (keeping an earlier one). True if it was clear.
  bool SetError(const absl::Status& status);
  // Takes the error, leaving it clear. OK if none.
  absl::Status TakeError();
  absl::Status error();

  void Enqueue(VarWait* wait, bool write) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void GrantFromHead(GrantList* granted) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  SpinMutex mu_;
  int running_reads_ ABSL_GUARDED_BY(mu_) = 0;
  bool write_running_ ABSL_GUARDED_BY(mu_) = false;
  VarWait* head_ ABSL_GUARDED_BY(mu_) = nullptr;
  VarWait* tail_ ABSL_GUARDED_BY(mu_) = nullptr;
  absl::Status error_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> version_{0};
  const uint64_t id_;
  const std::string name_;
  // Set when DeleteVariable is pushed; later pushes on it are refused.
  std::atomic<bool> deleting_{false};
};

using VarHandle = Var*;

}  // namespace actorflow::engine

#endif  // ACTORFLOW_ENGINE_VAR_H_
