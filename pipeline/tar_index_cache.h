#ifndef ACTORFLOW_PIPELINE_TAR_INDEX_CACHE_H_
#define ACTORFLOW_PIPELINE_TAR_INDEX_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pipeline/tar_index.h"

// The member lists of remote tar shards, kept on local disk so that a
// pipeline built again over the same URLs (a restart, a resume, the next
// job) reads no shard to index it. An entry is used only for the same URL,
// size and Last-Modified (a shard without Last-Modified is never cached).
// Where: $ACTORFLOW_CACHE_DIR/tar-index, else
// ${XDG_CACHE_HOME:-$HOME/.cache}/actorflow/tar-index. Failing to write an
// entry costs only the next build's scan.
namespace actorflow::internal::pipeline {

// The cached members of `url` at that size and time, if any.
std::optional<std::vector<TarMember>> LoadTarIndex(const std::string& url,
                                                   int64_t size,
                                                   int64_t modified);
// Keeps them (atomically: a reader sees the whole entry or none).
void SaveTarIndex(const std::string& url, int64_t size, int64_t modified,
                  const std::vector<TarMember>& members);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_TAR_INDEX_CACHE_H_
