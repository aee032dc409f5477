#ifndef ACTORFLOW_PIPELINE_RECORDIO_H_
#define ACTORFLOW_PIPELINE_RECORDIO_H_

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

// MXNet's RecordIO files of images (what im2rec writes), read as one
// dataset: their records in file order. A record is a little-endian uint32
// magic 0xced7230a, a uint32 of (part flag << 29 | length), the data and
// zeros up to 4 bytes; a record whose data held the magic is written in
// parts (flags 1 first, 2 middle, 3 last) and read back with the magic
// between them. An image record's data is a 24-byte header (uint32 flag,
// float label, two uint64 ids), `flag` more float labels when flag > 0,
// then the encoded image.
namespace actorflow::internal::pipeline {

inline constexpr uint32_t kRecordIoMagic = 0xced7230a;

class RecordIoFiles {
 public:
  // Walks each file's framing, reading only the records' headers. An error
  // names the file and the byte where the framing breaks.
  static absl::StatusOr<std::unique_ptr<RecordIoFiles>> Open(
      const std::vector<std::string>& paths);

  int64_t size() const { return static_cast<int64_t>(records_.size()); }
  // Bounds over every record: the image's bytes, the labels' count.
  int64_t largest_image() const { return largest_image_; }
  int64_t most_labels() const { return most_labels_; }
  // "path@offset": where record i begins.
  std::string Describe(int64_t i) const;
  // Record i's image bytes and labels ([label] when its flag is 0, else
  // its `flag` labels). Not thread-safe: one reader per object.
  absl::Status Read(int64_t i, std::string* image, std::vector<float>* labels);

 private:
  struct Record {
    int file;
    int64_t offset;  // of its first part's magic
    int64_t end;     // past its last part's padding
  };
  // Record i's data, its parts joined.
  absl::Status ReadData(int64_t i, std::string* data);

  std::vector<std::string> paths_;
  std::vector<Record> records_;
  std::vector<std::unique_ptr<std::ifstream>> open_;  // per file, lazily
  int64_t largest_image_ = 0;
  int64_t most_labels_ = 1;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_RECORDIO_H_
