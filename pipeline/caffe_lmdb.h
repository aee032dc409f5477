#ifndef ACTORFLOW_PIPELINE_CAFFE_LMDB_H_
#define ACTORFLOW_PIPELINE_CAFFE_LMDB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "proto/caffe_datum.pb.h"

// A Caffe LMDB (a directory holding data.mdb, or that file itself), read
// as a finished dataset: its records in key order, each a CaffeDatum.
// Opened without LMDB's lock file, so that several readers in one process
// (shard pipelines, the build's probe) may hold it at once; no writer may
// change it while it is read.
namespace actorflow::internal::pipeline {

class CaffeLmdb {
 public:
  // Lists the keys (one pass over the B-tree; values are not read). An
  // error names the path and LMDB's reason.
  static absl::StatusOr<std::unique_ptr<CaffeLmdb>> Open(
      const std::string& path);
  ~CaffeLmdb();
  CaffeLmdb(const CaffeLmdb&) = delete;
  CaffeLmdb& operator=(const CaffeLmdb&) = delete;

  int64_t size() const { return static_cast<int64_t>(keys_.size()); }
  const std::string& key(int64_t i) const { return keys_[i]; }
  // The largest record's bytes: a bound on any datum's data.
  int64_t largest_record() const { return largest_; }
  // Record i, parsed. An error names its key.
  absl::Status Read(int64_t i, actorflow::pipeline::CaffeDatum* datum) const;
  // Record i's image size (height, width): from the header at the start of
  // its encoded data, or the datum's own fields when raw. Reads the
  // record's fields in place, without copying its data.
  absl::StatusOr<std::pair<int64_t, int64_t>> ImageSize(int64_t i) const;

 private:
  CaffeLmdb() = default;
  struct Env;
  // A record's bytes in the map, valid while the Value (its read
  // transaction) lives.
  struct Value;
  absl::Status Get(int64_t i, Value* value) const;
  std::unique_ptr<Env> env_;
  std::vector<std::string> keys_;
  int64_t largest_ = 0;
};

// A datum's data is encoded (a JPEG or PNG file) unless `encoded` is set
// to false (DALI's rule): then it is raw bytes of height x width x
// channels.
bool IsEncoded(const actorflow::pipeline::CaffeDatum& datum);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_CAFFE_LMDB_H_
