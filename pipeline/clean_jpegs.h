#ifndef ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_
#define ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "base/mutex.h"
#include "pipeline/jpeg_rows.h"

namespace actorflow::internal::pipeline {

// The JPEG files (by a 64-bit hash of their bytes) this process has decoded
// to the end of their data without an error or a warning, and where their
// MCUs begin (JpegRows::Scan). A window of one of them need not read past
// its last row: the rows below a window are entropy-decoded only to find
// damage there (so that a file fails whatever window is drawn for it), and
// these have none. Nor need it read the MCUs above it or beside it: it
// starts at the MCUs it needs. Pixels and verdicts are the same either way:
// the same bytes decode the same. Two files whose hashes collide (about
// n^2 / 2^65 for n files) would share a verdict, and a decode from the
// starts of one would fail or differ for the other. At most kMaxFiles are
// kept, and MaxStartBytes() of starts; past that, files are read to the
// end every time, or from their first row.
class CleanJpegs {
 public:
  using Starts = std::shared_ptr<const std::vector<JpegMcuStart>>;
  static constexpr int64_t kMaxFiles = int64_t{1} << 22;
  // A 32nd of the machine's memory, at least 256 MiB. Starts take about
  // 2.3 KB for a photo of 500 x 375: ImageNet's 1.3 million files about
  // 3 GB, all kept on a machine of 96 GB.
  static int64_t MaxStartBytes();

  // The process's.
  static CleanJpegs& Get();
  static uint64_t Key(absl::Span<const uint8_t> encoded);

  bool Contains(uint64_t key) const;
  // Known clean, with its MCUs' starts (none: not a file JpegRows follows).
  void Add(uint64_t key, std::vector<JpegMcuStart> starts);
  // Whether starts of another file would be kept (not worth a Scan if
  // not).
  bool HasRoom() const;
  // Whether `key` is known clean; if so, *starts is what is kept of its
  // starts (null: none).
  bool Find(uint64_t key, Starts* starts) const;

 private:
  mutable Mutex mu_;
  absl::flat_hash_map<uint64_t, Starts> files_ ABSL_GUARDED_BY(mu_);
  int64_t start_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_
