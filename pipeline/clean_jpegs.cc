#include "pipeline/clean_jpegs.h"

#include <unistd.h>

#include <algorithm>

#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace actorflow::internal::pipeline {

CleanJpegs& CleanJpegs::Get() {
  static CleanJpegs* const clean = new CleanJpegs;
  return *clean;
}

uint64_t CleanJpegs::Key(absl::Span<const uint8_t> encoded) {
  // About 5 us for a 100 KB photo, against the tenth of a millisecond or
  // more a window saves by stopping early.
  return absl::Hash<absl::string_view>{}(absl::string_view(
      reinterpret_cast<const char*>(encoded.data()), encoded.size()));
}

int64_t CleanJpegs::MaxStartBytes() {
  static const int64_t bytes = [] {
    const int64_t pages = sysconf(_SC_PHYS_PAGES);
    const int64_t page = sysconf(_SC_PAGESIZE);
    return std::max<int64_t>(int64_t{256} << 20,
                             pages > 0 && page > 0 ? pages / 32 * page : 0);
  }();
  return bytes;
}

bool CleanJpegs::Contains(uint64_t key) const {
  MutexLock lock(&mu_);
  return files_.contains(key);
}

void CleanJpegs::Add(uint64_t key, std::vector<JpegMcuStart> starts) {
  const auto bytes = static_cast<int64_t>(starts.size() * sizeof(JpegMcuStart));
  MutexLock lock(&mu_);
  if (static_cast<int64_t>(files_.size()) >= kMaxFiles) return;
  Starts& kept = files_[key];
  if (kept == nullptr && !starts.empty() &&
      start_bytes_ + bytes <= MaxStartBytes()) {
    start_bytes_ += bytes;
    kept = std::make_shared<const std::vector<JpegMcuStart>>(std::move(starts));
  }
}

bool CleanJpegs::HasRoom() const {
  MutexLock lock(&mu_);
  return static_cast<int64_t>(files_.size()) < kMaxFiles &&
         start_bytes_ < MaxStartBytes();
}

bool CleanJpegs::Find(uint64_t key, Starts* starts) const {
  MutexLock lock(&mu_);
  auto it = files_.find(key);
  if (it == files_.end()) return false;
  *starts = it->second;
  return true;
}

}  // namespace actorflow::internal::pipeline
