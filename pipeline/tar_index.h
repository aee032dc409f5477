#ifndef ACTORFLOW_PIPELINE_TAR_INDEX_H_
#define ACTORFLOW_PIPELINE_TAR_INDEX_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pipeline/shard_files.h"

// The members of tar files (POSIX ustar, with GNU long names and pax path
// records), grouped into WebDataset samples: consecutive members sharing a
// key (the path up to the first dot of its last component) are one
// sample, each member a component named by what follows that dot
// ("images/0001.jpg": key "images/0001", extension "jpg").
namespace actorflow::internal::pipeline {

struct TarMember {
  std::string name;
  int64_t offset = 0;  // of the data, in the tar file
  int64_t size = 0;    // as its header says
  // Bytes the file holds: less than `size` for the last member of a
  // truncated tar file, which is listed (to be named when read) and ends
  // the list.
  int64_t available = 0;
};

// Regular files only, in the order they are stored, of shard `file`. An
// error names the file and the offset of a header that is not a tar header.
// A remote shard's list comes from the local cache when it holds one for
// the same URL, size and Last-Modified (tar_index_cache.h), and goes there
// after a scan.
absl::StatusOr<std::vector<TarMember>> ListTar(ShardFiles* files, int file);
// The scan itself: every header read from the shard.
absl::StatusOr<std::vector<TarMember>> ScanTar(ShardFiles* files, int file);

struct TarComponent {
  int file = 0;  // index into the shards
  int64_t offset = 0, size = 0, available = 0;
};
struct TarSample {
  std::string key;
  std::map<std::string, TarComponent> components;  // by extension
};

// Every sample of the shards in `files`, in order; `per_file` (if not
// null) gets how many samples each shard holds.
absl::StatusOr<std::vector<TarSample>> IndexWebDataset(
    ShardFiles* files, std::vector<int64_t>* per_file = nullptr);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_TAR_INDEX_H_
