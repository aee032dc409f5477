#include "engine/var.h"

#include <cstddef>

#include "engine/opr.h"

namespace actorflow::engine {

namespace {

OprBlock* BlockOf(uintptr_t entry) {
  return reinterpret_cast<OprBlock*>(entry & ~uintptr_t{1});
}
bool IsWrite(uintptr_t entry) { return (entry & 1) != 0; }

}  // namespace

static_assert(alignof(OprBlock) >= 2, "queue entries keep a flag in bit 0");
Var::~Var() {
  static_assert(offsetof(Var, ring_) + sizeof(Ring) <= 64,
                "a variable's queue must stay on its first cache line");
  if (capacity_ != kInlineEntries) delete[] ring_.heap;
  delete[] spare_;
}

void Var::Grow() {
  uint32_t capacity = capacity_ * 2;
  Entry* grown;
  if (capacity_ == kInlineEntries && spare_ != nullptr) {
    // Leaving the inline slots for the ring kept from an earlier burst.
    grown = spare_;
    capacity = spare_capacity_;
    spare_ = nullptr;
  } else {
    grown = new Entry[capacity];
  }
  Entry* old = entries();
  for (uint32_t i = 0; i < size_; ++i) {
    grown[i] = old[(head_ + i) & (capacity_ - 1)];
  }
  if (capacity_ != kInlineEntries) delete[] ring_.heap;
  ring_.heap = grown;
  capacity_ = capacity;
  head_ = 0;
}

void Var::PopFront() {
  head_ = (head_ + 1) & (capacity_ - 1);
  if (--size_ != 0) return;
  head_ = 0;
  // Empty: back to the inline slots, so that a burst that once queued many
  // does not keep the variable off its own cache line; the heap ring is
  // kept for the next burst (the only one kept, and the largest so far).
  if (capacity_ != kInlineEntries) {
    delete[] spare_;
    spare_ = ring_.heap;
    spare_capacity_ = capacity_;
    capacity_ = kInlineEntries;
  }
}

void Var::GrantFromHead(GrantList* granted) {
  if (write_running_ || size_ == 0) return;
  Entry head = entries()[head_];
  if (IsWrite(head)) {
    if (running_reads_ != 0) return;
    write_running_ = true;
    granted->push_back(BlockOf(head));
    PopFront();
    return;
  }
  while (true) {
    ++running_reads_;
    granted->push_back(BlockOf(head));
    PopFront();
    if (size_ == 0) return;
    head = entries()[head_];
    if (IsWrite(head)) return;
  }
}

bool Var::SetError(const absl::Status& status) {
  internal::SpinMutexLock lock(&mu_);
  if (!error_.ok()) return false;
  error_ = status;
  return true;
}

absl::Status Var::TakeError() {
  internal::SpinMutexLock lock(&mu_);
  absl::Status taken = std::move(error_);
  error_ = absl::OkStatus();
  return taken;
}

absl::Status Var::error() {
  internal::SpinMutexLock lock(&mu_);
  return error_;
}

}  // namespace actorflow::engine
