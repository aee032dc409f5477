#include "pipeline/clean_jpegs.h"

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

bool CleanJpegs::Contains(uint64_t key) const {
  MutexLock lock(&mu_);
  return files_.contains(key);
}

void CleanJpegs::Add(uint64_t key) {
  MutexLock lock(&mu_);
  if (static_cast<int64_t>(files_.size()) < kMaxFiles) files_.try_emplace(key);
}

std::optional<JpegRowStart> CleanJpegs::RowStart(
    uint64_t key, const JpegRows& rows, absl::Span<const uint8_t> encoded,
    int row) {
  std::vector<JpegRowStart> starts;
  {
    MutexLock lock(&mu_);
    auto it = files_.find(key);
    if (it == files_.end()) return std::nullopt;
    if (row < static_cast<int>(it->second.size())) return it->second[row];
    starts = it->second;
  }
  // Read outside the lock: other workers' files meanwhile.
  const size_t known = starts.size();
  std::optional<JpegRowStart> start;
  if (rows.Scan(encoded, row, &starts)) start = starts[row];
  if (starts.size() > known) {
    MutexLock lock(&mu_);
    auto it = files_.find(key);
    if (it != files_.end() && starts.size() > it->second.size()) {
      const auto more = static_cast<int64_t>(
          (starts.size() - it->second.size()) * sizeof(JpegRowStart));
      if (row_bytes_ + more <= kMaxRowBytes) {
        row_bytes_ += more;
        it->second = std::move(starts);
      }
    }
  }
  return start;
}

int CleanJpegs::KnownRows(uint64_t key) const {
  MutexLock lock(&mu_);
  auto it = files_.find(key);
  return it == files_.end() ? 0 : static_cast<int>(it->second.size());
}

}  // namespace actorflow::internal::pipeline
