#ifndef ACTORFLOW_PIPELINE_TFRECORD_H_
#define ACTORFLOW_PIPELINE_TFRECORD_H_

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

// TFRecord files (TensorFlow's record format: each record a little-endian
// uint64 length, a uint32 checksum of it, the data, and a uint32 checksum
// of the data), read as one dataset: their records in file order. The
// checksums are skipped, not verified (the framing is: a record cut short
// is an error naming the file and the byte).
namespace actorflow::internal::pipeline {

class TfRecordFiles {
 public:
  // Scans each file's framing (the data is not read). An error names the
  // file and the byte where its framing breaks.
  static absl::StatusOr<std::unique_ptr<TfRecordFiles>> Open(
      const std::vector<std::string>& paths);

  int64_t size() const { return static_cast<int64_t>(records_.size()); }
  // The largest record's bytes: a bound on any feature's bytes or values.
  int64_t largest_record() const { return largest_; }
  // "path@offset": where record i begins.
  std::string Describe(int64_t i) const;
  // Record i's data. Not thread-safe: one reader per object.
  absl::Status Read(int64_t i, std::string* data);

 private:
  struct Record {
    int file;
    int64_t offset;  // of the data
    int64_t length;
  };
  std::vector<std::string> paths_;
  std::vector<Record> records_;
  std::vector<std::unique_ptr<std::ifstream>> open_;  // per file, lazily
  int64_t largest_ = 0;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_TFRECORD_H_
