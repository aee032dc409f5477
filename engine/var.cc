#include "engine/var.h"

namespace actorflow::engine {

bool Var::AppendRead(VarWait* wait) {
  SpinMutexLock lock(&mu_);
  if (!write_running_ && head_ == nullptr) {
    ++running_reads_;
    return true;
  }
  Enqueue(wait, /*write=*/false);
  return false;
}

bool Var::AppendWrite(VarWait* wait) {
  SpinMutexLock lock(&mu_);
  if (!write_running_ && running_reads_ == 0 && head_ == nullptr) {
    write_running_ = true;
    return true;
  }
  Enqueue(wait, /*write=*/true);
  return false;
}

void Var::Enqueue(VarWait* wait, bool write) {
  wait->write = write;
  wait->next = nullptr;
  (tail_ ? tail_->next : head_) = wait;
  tail_ = wait;
}

void Var::CompleteRead(GrantList* granted) {
  SpinMutexLock lock(&mu_);
  --running_reads_;
  GrantFromHead(granted);
}

void Var::CompleteWrite(GrantList* granted, bool counts_version) {
  SpinMutexLock lock(&mu_);
  write_running_ = false;
  if (counts_version) version_.fetch_add(1, std::memory_order_release);
  GrantFromHead(granted);
}

void Var::GrantFromHead(GrantList* granted) {
  if (write_running_) return;
  if (head_ != nullptr && head_->write) {
    if (running_reads_ != 0) return;
    write_running_ = true;
    granted->push_back(head_->block);
    head_ = head_->next;
  } else {
    while (head_ != nullptr && !head_->write) {
      ++running_reads_;
      granted->push_back(head_->block);
      head_ = head_->next;
    }
  }
  if (head_ == nullptr) tail_ = nullptr;
}

bool Var::SetError(const absl::Status& status) {
  SpinMutexLock lock(&mu_);
  if (!error_.ok()) return false;
  error_ = status;
  return true;
}

absl::Status Var::TakeError() {
  SpinMutexLock lock(&mu_);
  absl::Status taken = std::move(error_);
  error_ = absl::OkStatus();
  return taken;
}

absl::Status Var::error() {
  SpinMutexLock lock(&mu_);
  return error_;
}

}  // namespace actorflow::engine
