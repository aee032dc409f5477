#ifndef ACTORFLOW_PIPELINE_TAR_INDEX_H_
#define ACTORFLOW_PIPELINE_TAR_INDEX_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

// The members of tar files (POSIX ustar, with GNU long names and pax path
// records), grouped into WebDataset samples: consecutive members sharing a
// key (the path up to the first dot of its last component) are one
// sample, each member a component named by what follows that dot
// ("images/0001.jpg": key "images/0001", extension "jpg").
namespace actorflow::internal::pipeline {

struct TarMember {
  std::string name;
  int64_t offset = 0;  // of the data, in the tar file
  int64_t size = 0;
};

// Regular files only, in the order they are stored. An error names the
// file and the offset of a header that is not a tar header.
absl::StatusOr<std::vector<TarMember>> ListTar(const std::string& path);

struct TarComponent {
  int file = 0;  // index into the paths
  int64_t offset = 0, size = 0;
};
struct TarSample {
  std::string key;
  std::map<std::string, TarComponent> components;  // by extension
};

// Every sample of `paths`, in order.
absl::StatusOr<std::vector<TarSample>> IndexWebDataset(
    const std::vector<std::string>& paths);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_TAR_INDEX_H_
