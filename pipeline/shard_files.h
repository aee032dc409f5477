#ifndef ACTORFLOW_PIPELINE_SHARD_FILES_H_
#define ACTORFLOW_PIPELINE_SHARD_FILES_H_

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/http_client.h"

// The tar shards a WebDataset reader reads: local files or http(s):// URLs,
// read by byte range. Not thread-safe: one reader's thread uses its set.
namespace actorflow::internal::pipeline {

struct ShardReadOptions {
  HttpRetry retry;
  // Remote shards are read in aligned blocks of this many bytes (a read
  // fetches the blocks it touches that are not held, in one request) ...
  int64_t block_bytes = 1 << 20;
  // ... and the last `blocks` blocks used are held: a reader's memory for
  // remote data is block_bytes x blocks beyond its registers.
  int blocks = 4;
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
  bool remote(int file) const { return shards_[file].remote; }
  // A remote shard's Last-Modified, seconds since 1970; -1: not known.
  int64_t modified(int file) const { return shards_[file].modified; }

  // Reads bytes [offset, offset + length) of shard `file` into `out` and
  // returns how many: fewer only where the shard ends. An error names the
  // shard.
  absl::StatusOr<int64_t> Read(int file, int64_t offset, int64_t length,
                               char* out);

 private:
  struct Shard {
    std::string path;
    int64_t size = 0;
    int fd = -1;  // local shards
    bool remote = false;
    int64_t modified = -1;  // a remote shard's Last-Modified (-1: unknown)
  };
  // Blocks held, by (shard, block number); `used` orders them (most
  // recent first) for eviction.
  using BlockKey = std::pair<int, int64_t>;
  struct Block {
    std::string bytes;
    std::list<BlockKey>::iterator used;
  };
  absl::Status ReadRemote(int file, int64_t offset, int64_t length, char* out);
  // Fetches blocks [first, last] of shard `file` that are not held.
  absl::Status Fetch(int file, int64_t first, int64_t last);

  ShardReadOptions options_;
  std::vector<Shard> shards_;
  std::unique_ptr<HttpClient> http_;  // made for the first URL
  std::map<BlockKey, Block> blocks_;
  std::list<BlockKey> used_;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SHARD_FILES_H_
