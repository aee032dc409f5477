#ifndef ACTORFLOW_PIPELINE_SHARD_FILES_H_
#define ACTORFLOW_PIPELINE_SHARD_FILES_H_

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/http_client.h"

// The tar shards a WebDataset reader reads: local files or http(s):// URLs,
// read by byte range. Not thread-safe: one reader's thread uses its set.
namespace actorflow::internal::pipeline {

struct ShardReadOptions {
  HttpRetry retry;
  // A remote read fetches at least this many bytes from where it starts
  // (the samples after it, in a shard's order, come with it) ...
  int64_t read_ahead_bytes = 1 << 20;
  // ... and keeps at most this many such blocks: a reader's memory for
  // remote shards is read_ahead_bytes x read_ahead_blocks beyond its
  // registers.
  int read_ahead_blocks = 4;
};

class ShardFiles {
 public:
  explicit ShardFiles(ShardReadOptions options = ShardReadOptions());
  ~ShardFiles();

  // Adds a shard (a path or a URL) and returns its index; learns its size
  // (a HEAD request for a URL).
  absl::StatusOr<int> Add(const std::string& path);
  int count() const { return static_cast<int>(shards_.size()); }
  const std::string& path(int file) const { return shards_[file].path; }
  int64_t size(int file) const { return shards_[file].size; }

  // Reads bytes [offset, offset + length) of shard `file` into `out` and
  // returns how many: fewer only where the shard ends. An error names the
  // shard.
  absl::StatusOr<int64_t> Read(int file, int64_t offset, int64_t length,
                               char* out);

  // Remote requests made and retried so far (0 for local shards).
  int64_t requests() const { return http_ ? http_->requests() : 0; }
  int64_t retries() const { return http_ ? http_->retries() : 0; }

 private:
  struct Shard {
    std::string path;
    int64_t size = 0;
    int fd = -1;  // local shards
    bool remote = false;
  };
  struct Block {
    int file = 0;
    int64_t begin = 0;
    std::string bytes;
  };
  absl::Status ReadRemote(int file, int64_t offset, int64_t length, char* out);

  ShardReadOptions options_;
  std::vector<Shard> shards_;
  std::unique_ptr<HttpClient> http_;  // made for the first URL
  std::list<Block> blocks_;           // most recently used first
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SHARD_FILES_H_
