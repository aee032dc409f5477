#ifndef ACTORFLOW_PIPELINE_DATASET_H_
#define ACTORFLOW_PIPELINE_DATASET_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/sample.h"

// Where readers get samples: a list of files, or an IDX (MNIST format)
// pair; and in what order an epoch visits them.
namespace actorflow::internal::pipeline {

struct FileEntry {
  std::string path;
  int32_t label = 0;
};

// Image files (.jpg, .jpeg, .png, any case) under `dir`, sorted by path.
// A file's label is the index of its first-level subdirectory among the
// sorted first-level names that hold images, files directly in `dir`
// counting as the name "" (so they come first): a directory of class
// subdirectories gets labels 0..k-1. An error if `dir` cannot be read.
absl::StatusOr<std::vector<FileEntry>> ListImageDirectory(
    const std::string& dir);

// A file list: one "path [label]" per line; relative paths are relative
// to the list's directory; blank lines and lines starting with # skipped.
absl::StatusOr<std::vector<FileEntry>> ReadFileList(const std::string& path);

// The whole content of a file.
absl::Status ReadWholeFile(const std::string& path, Bytes* out);

// Samples [begin, end) of `count` that shard `shard` of `shards` owns:
// contiguous ranges that together cover every sample once.
void ShardRange(int64_t count, int64_t shard, int64_t shards, int64_t* begin,
                int64_t* end);

// How a reader's shards see a dataset of `count` samples, as DALI's readers
// do. With `shuffle`, the whole list is permuted once, with a fixed seed
// (every rank computes the same permutation, whatever seed each rank's
// pipeline has), before it is cut into shards: each shard is a random subset,
// not a run of sorted files (a run of one class folder after another). Unless
// `stick_to_shard`, a rank takes shard (shard_id + epoch) % num_shards in each
// epoch, so over num_shards epochs it sees every sample. Every shard yields the
// same number of samples, ceil(count / num_shards): a shorter one repeats its
// last sample, so every rank runs as many batches (a data-parallel loop never
// waits on a rank that ran out).
//
// `groups`, if given, cuts the list into consecutive runs of these sizes
// (summing to `count`: a WebDataset's tar files) that shuffle as units:
// the permutation moves whole runs and keeps each run's order, so a shard
// is a few whole runs (cut only at its two ends) and reads them in order.
class ShardPlan {
 public:
  ShardPlan(int64_t count, int64_t shard_id, int64_t num_shards, bool shuffle,
            bool stick_to_shard, const std::vector<int64_t>& groups = {});
  // Samples each shard yields per epoch.
  int64_t per_shard() const { return per_shard_; }
  // The dataset index of the shard's `position`th sample (0 <= position <
  // per_shard()) in `epoch`, before the epoch's own shuffle.
  int64_t Index(int64_t epoch, int64_t position) const;

 private:
  const int64_t count_, shard_id_, num_shards_;
  const bool stick_to_shard_;
  int64_t per_shard_ = 0;
  std::vector<int64_t> permutation_;  // empty: the identity
};

// The order of an epoch over n samples: 0..n-1 when window <= 1, else
// shuffled through a window of `window` samples (a sample leaves the window
// at a random slot and the next one takes its place), seeded by seed and
// epoch, so every epoch has its own order and each is reproducible.
std::vector<int64_t> EpochOrder(int64_t n, int64_t window, uint64_t seed,
                                int64_t epoch);

// An IDX file (the MNIST format), gzip-compressed or not: unsigned bytes
// with 1 to 4 dimensions.
struct IdxArray {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};
absl::StatusOr<IdxArray> ReadIdx(const std::string& path);
// Only the dimensions (reads the header, not the data).
absl::StatusOr<std::vector<int64_t>> ReadIdxHeader(const std::string& path);

// Where Debian's dataset-fashion-mnist package puts the files.
constexpr char kFashionMnistDir[] = "/usr/share/datasets/fashion-mnist";
// $ACTORFLOW_FASHION_MNIST if set (a copy elsewhere, e.g. on a machine
// without the package), else kFashionMnistDir.
std::string FashionMnistDir();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_DATASET_H_
