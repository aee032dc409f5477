#ifndef ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_
#define ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/types/span.h"
#include "base/mutex.h"
#include "pipeline/jpeg_rows.h"

namespace actorflow::internal::pipeline {

// The JPEG files (by a 64-bit hash of their bytes) this process has decoded
// to the end of their data without an error or a warning, and where their
// MCU rows begin as far as windows of them have looked (JpegRows). A window
// of one of them need not read past its last row: the rows below a window
// are entropy-decoded only to find damage there (so that a file fails
// whatever window is drawn for it), and these have none. Nor need it read
// the rows above from the first: it starts at the MCU row above it. Pixels
// and verdicts are the same either way: the same bytes decode the same.
// Two files whose hashes collide (about n^2 / 2^65 for n files) would share
// a verdict, and a decode from the row starts of one would fail or differ
// for the other. At most kMaxFiles are kept, and kMaxRowBytes of row
// starts; past that, files are read to the end every time, or their rows
// found again.
class CleanJpegs {
 public:
  static constexpr int64_t kMaxFiles = int64_t{1} << 22;
  static constexpr int64_t kMaxRowBytes = int64_t{256} << 20;

  // The process's.
  static CleanJpegs& Get();
  static uint64_t Key(absl::Span<const uint8_t> encoded);

  bool Contains(uint64_t key) const;
  void Add(uint64_t key);

  // Where MCU row `row` of the clean file `key` (bytes `encoded`, laid out
  // as `rows` says) begins: as kept, or found now by reading the Huffman
  // codes from the last row kept (and kept in turn). nullopt if the file
  // is not known clean or its data do not decode that far.
  std::optional<JpegRowStart> RowStart(uint64_t key, const JpegRows& rows,
                                       absl::Span<const uint8_t> encoded,
                                       int row);
  // How many row starts are kept for `key`.
  int KnownRows(uint64_t key) const;

 private:
  mutable Mutex mu_;
  // Each clean file's row starts (of rows 0, 1, ...) found so far.
  absl::flat_hash_map<uint64_t, std::vector<JpegRowStart>> files_
      ABSL_GUARDED_BY(mu_);
  int64_t row_bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_CLEAN_JPEGS_H_
