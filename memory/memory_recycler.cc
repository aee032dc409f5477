#include "memory/memory_recycler.h"

#include <utility>

namespace actorflow::internal {

absl::StatusOr<std::shared_ptr<SyncedMemory>> MemoryRecycler::Get(
    size_t bytes) {
  {
    MutexLock lock(&mu_);
    auto it = kept_.find(bytes);
    if (it != kept_.end() && !it->second.empty()) {
      std::shared_ptr<SyncedMemory> memory = std::move(it->second.back());
      it->second.pop_back();
      return memory;
    }
  }
  auto memory = std::make_shared<SyncedMemory>(
      bytes, SyncedMemoryOptions{.host = SyncedMemoryOptions::Host::kPageable});
  absl::StatusOr<void*> host = memory->mutable_cpu_data();
  if (!host.ok()) return host.status();
  return memory;
}

std::shared_ptr<const void> MemoryRecycler::Lend(
    std::shared_ptr<SyncedMemory> memory) {
  struct Lent {
    std::shared_ptr<SyncedMemory> memory;
  };
  std::weak_ptr<MemoryRecycler> recycler = weak_from_this();
  return std::shared_ptr<const void>(
      new Lent{std::move(memory)}, [recycler](Lent* lent) {
        if (std::shared_ptr<MemoryRecycler> alive = recycler.lock()) {
          alive->Put(std::move(lent->memory));
        }
        delete lent;
      });
}

int MemoryRecycler::kept() const {
  MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [bytes, buffers] : kept_) n += buffers.size();
  return n;
}

void MemoryRecycler::Put(std::shared_ptr<SyncedMemory> memory) {
  MutexLock lock(&mu_);
  std::vector<std::shared_ptr<SyncedMemory>>& kept = kept_[memory->size()];
  if (static_cast<int>(kept.size()) < keep_per_size_) {
    kept.push_back(std::move(memory));
  }
}

}  // namespace actorflow::internal
