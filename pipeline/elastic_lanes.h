#ifndef ACTORFLOW_PIPELINE_ELASTIC_LANES_H_
#define ACTORFLOW_PIPELINE_ELASTIC_LANES_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "actorflow/skipped_sample.h"
#include "base/mutex.h"

// The global schedule of an elastic reader (docs/pipelines.md, "At
// scale"). An epoch is one order over all `positions` samples, whatever the
// number of ranks. Global batch q is `lanes` rows (the global batch size);
// row l of it comes from lane l, the positions l, l + lanes, l + 2 lanes ...
// of the epoch: its q-th good sample (a skipped one is refilled by the
// lane's next). Rank r of R owns the lanes [r * lanes / R, (r + 1) * lanes
// / R) and reads only their positions. What a lane yields depends on the
// data and the seed alone, so the global batches, joined over the ranks in
// rank order, are the same at any number of ranks and threads, and a
// checkpoint (the epoch, the batch count and the skipped positions) resumes
// at another. Every rank makes ceil(positions / lanes) batches per epoch;
// the last ones are short by the samples its lanes skipped.
namespace actorflow::internal::pipeline {

struct LaneLayout {
  int64_t lanes = 1;      // the global batch size
  int64_t first = 0;      // this rank's first lane
  int64_t own = 1;        // how many lanes it owns (its batch size)
  int64_t positions = 0;  // samples in an epoch

  int64_t LaneOf(int64_t position) const { return position % lanes; }
  int64_t IndexInLane(int64_t position) const { return position / lanes; }
  // Positions of lane l in an epoch.
  int64_t LaneLength(int64_t lane) const {
    return lane < positions ? (positions - 1 - lane) / lanes + 1 : 0;
  }
  int64_t BatchesPerEpoch() const { return (positions + lanes - 1) / lanes; }
  // The last chunk that brings this rank a sample (-1: none does); from it
  // on every lane of the rank has all its samples, so each chunk makes a
  // batch, of zero rows once they are used up.
  int64_t LastOwnChunk() const {
    int64_t last = -1;
    for (int64_t l = first; l < first + own; ++l) {
      last = std::max(last, LaneLength(l) - 1);
    }
    return last;
  }
  // Where lane l stands after `batches` batches, given the indices in the
  // lane of its skipped samples (sorted, any number past that point): the
  // first index not yet used.
  int64_t Cursor(int64_t lane, int64_t batches,
                 const std::vector<int64_t>& skipped) const {
    int64_t cursor = batches;
    for (int64_t index : skipped) {
      if (index < cursor) ++cursor;
    }
    return std::min(cursor, LaneLength(lane));
  }
};

// For each of the rank's lanes, its cursor after `batches` batches of
// `epoch`, from the skips in `log` (any rank's: other lanes and epochs are
// left out).
inline std::vector<int64_t> CursorsAfter(
    const LaneLayout& lanes, int64_t epoch, int64_t batches,
    const std::vector<SkippedSample>& log) {
  std::vector<std::vector<int64_t>> skipped(lanes.own);
  for (const SkippedSample& sample : log) {
    const int64_t lane = lanes.LaneOf(sample.position) - lanes.first;
    if (sample.epoch != epoch || lane < 0 || lane >= lanes.own) continue;
    skipped[lane].push_back(lanes.IndexInLane(sample.position));
  }
  std::vector<int64_t> cursors(lanes.own);
  for (int64_t l = 0; l < lanes.own; ++l) {
    std::sort(skipped[l].begin(), skipped[l].end());
    cursors[l] = lanes.Cursor(lanes.first + l, batches, skipped[l]);
  }
  return cursors;
}

// The skips of `log` that the rank's lanes had reached by `cursors` in
// `epoch` (and every earlier epoch's): those past a cursor are read, and
// logged, again.
inline std::vector<SkippedSample> SkipsBefore(
    const LaneLayout& lanes, int64_t epoch, const std::vector<int64_t>& cursors,
    std::vector<SkippedSample> log) {
  std::vector<SkippedSample> kept;
  for (SkippedSample& sample : log) {
    const int64_t lane = lanes.LaneOf(sample.position) - lanes.first;
    if (lane < 0 || lane >= lanes.own || sample.epoch > epoch) continue;
    if (sample.epoch == epoch &&
        lanes.IndexInLane(sample.position) >= cursors[lane]) {
      continue;
    }
    kept.push_back(std::move(sample));
  }
  return kept;
}

// Where a restored elastic pipeline's lanes resume: for epoch `epoch`, the
// first index in each of the rank's lanes not yet used (positions before
// it were handed out, or skipped, before the checkpoint). The pipeline sets
// it before its first chunk; the batch kernel reads it at that epoch's
// first chunk.
class LaneCursors {
 public:
  void Set(int64_t epoch, std::vector<int64_t> cursors) {
    MutexLock lock(&mu_);
    epoch_ = epoch;
    cursors_ = std::move(cursors);
  }
  // The cursors for `epoch` (all zero unless restored into it).
  std::vector<int64_t> For(int64_t epoch, int64_t own) const {
    MutexLock lock(&mu_);
    if (epoch == epoch_ && static_cast<int64_t>(cursors_.size()) == own) {
      return cursors_;
    }
    return std::vector<int64_t>(own, 0);
  }

 private:
  mutable Mutex mu_;
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = -1;
  std::vector<int64_t> cursors_ ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_ELASTIC_LANES_H_
