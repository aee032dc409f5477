#ifndef ACTORFLOW_PIPELINE_AUTOTUNE_H_
#define ACTORFLOW_PIPELINE_AUTOTUNE_H_

#include <cstdint>
#include <vector>

#include "actorflow/pipeline.h"

// Chooses a pipeline's worker threads and prefetch depth from measured
// windows (PipelineOptions::autotune, docs/pipelines.md "At scale"). Neither
// knob changes a batch, so trying them is free of consequences for the
// data: only speed and memory differ. The search: the worker counts up to
// the CPU budget at the starting depth, then depths at the best count, then
// the best trial; a trial within 3 % of the fastest that uses fewer threads
// (then less depth) wins, so a pipeline that keeps ahead of its caller
// anyway settles on the cheapest. A candidate whose memory, predicted from
// the trials (proportional to threads x (depth + 1)), would pass the memory
// budget is not tried; a trial that passed it is not chosen.
namespace actorflow::internal::pipeline {

class Autotuner {
 public:
  // `cpus`: the most threads; `memory_budget`: bytes the pipeline may add
  // to the process's resident memory (0: no limit); `start`: the config
  // running now (the first trial).
  Autotuner(int cpus, int64_t memory_budget, int start_threads,
            int start_depth);

  int threads() const { return threads_; }
  int depth() const { return depth_; }
  bool settled() const { return settled_; }
  const std::vector<AutotuneTrial>& trials() const { return trials_; }

  // A window measured at (threads(), depth()): samples per second as the
  // caller took them, and the memory then held above the baseline. Moves
  // threads() and depth() to what to run next (settled(): for good).
  void Record(double samples_per_s, int64_t memory_bytes);

 private:
  bool Tried(int threads, int depth) const;
  bool Fits(int threads, int depth) const;
  const AutotuneTrial* Best() const;
  // The next candidate of the current phase, or false when it has none.
  bool Advance();

  const int cpus_;
  const int64_t memory_budget_;
  int threads_, depth_;
  int phase_ = 0;  // 0: threads at the starting depth; 1: depths; 2: done
  std::vector<int> thread_candidates_, depth_candidates_;
  bool settled_ = false;
  std::vector<AutotuneTrial> trials_;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_AUTOTUNE_H_
