#ifndef ACTORFLOW_PIPELINE_SKIP_LOG_H_
#define ACTORFLOW_PIPELINE_SKIP_LOG_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "actorflow/skipped_sample.h"
#include "base/mutex.h"

namespace actorflow::internal::pipeline {

// Where the batch kernel records what it dropped; the pipeline reads it.
class SkipLog {
 public:
  void Add(SkippedSample sample) {
    MutexLock lock(&mu_);
    samples_.push_back(std::move(sample));
  }
  std::vector<SkippedSample> Snapshot() const {
    MutexLock lock(&mu_);
    return samples_;
  }
  // A restored pipeline's log (Pipeline::Restore).
  void Replace(std::vector<SkippedSample> samples) {
    MutexLock lock(&mu_);
    samples_ = std::move(samples);
  }
  // Samples dropped in `epoch`, counted without copying the log.
  int64_t CountInEpoch(int64_t epoch) const {
    MutexLock lock(&mu_);
    int64_t count = 0;
    for (const SkippedSample& s : samples_) count += s.epoch == epoch;
    return count;
  }

 private:
  mutable Mutex mu_;
  std::vector<SkippedSample> samples_ ABSL_GUARDED_BY(mu_);
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_SKIP_LOG_H_
