#include "pipeline/autotune.h"

#include <algorithm>

namespace actorflow::internal::pipeline {

Autotuner::Autotuner(int cpus, int64_t memory_budget, int start_threads,
                     int start_depth)
    : cpus_(std::max(cpus, 1)),
      memory_budget_(memory_budget),
      threads_(start_threads),
      depth_(start_depth) {
  // Every count up to 4, then doubling, and the budget itself.
  for (int t = 1; t <= cpus_; t = t < 4 ? t + 1 : t * 2) {
    thread_candidates_.push_back(t);
  }
  if (thread_candidates_.back() != cpus_) thread_candidates_.push_back(cpus_);
  depth_candidates_ = {1, 2, 3, 4, 6, 8};
}

bool Autotuner::Tried(int threads, int depth) const {
  for (const AutotuneTrial& t : trials_) {
    if (t.threads == threads && t.depth == depth) return true;
  }
  return false;
}

bool Autotuner::Fits(int threads, int depth) const {
  if (memory_budget_ <= 0) return true;
  for (const AutotuneTrial& t : trials_) {
    const double scale = static_cast<double>(threads * (depth + 1)) /
                         static_cast<double>(t.threads * (t.depth + 1));
    if (static_cast<double>(t.memory_bytes) * scale >
        static_cast<double>(memory_budget_)) {
      return false;
    }
  }
  return true;
}

const AutotuneTrial* Autotuner::Best() const {
  double fastest = 0;
  for (const AutotuneTrial& t : trials_) {
    if (memory_budget_ > 0 && t.memory_bytes > memory_budget_) continue;
    fastest = std::max(fastest, t.images_per_s);
  }
  const AutotuneTrial* best = nullptr;
  for (const AutotuneTrial& t : trials_) {
    if (memory_budget_ > 0 && t.memory_bytes > memory_budget_) continue;
    if (t.images_per_s < 0.97 * fastest) continue;
    if (best == nullptr || t.threads < best->threads ||
        (t.threads == best->threads && t.depth < best->depth)) {
      best = &t;
    }
  }
  return best;
}

bool Autotuner::Advance() {
  if (phase_ == 0) {
    for (int t : thread_candidates_) {
      if (!Tried(t, depth_) && Fits(t, depth_)) {
        threads_ = t;
        return true;
      }
    }
    phase_ = 1;
    const AutotuneTrial* best = Best();
    if (best != nullptr) threads_ = best->threads;
  }
  if (phase_ == 1) {
    // Deeper only while it pays: stop after a depth that gained nothing.
    const AutotuneTrial* best = Best();
    for (int d : depth_candidates_) {
      if (Tried(threads_, d) || !Fits(threads_, d)) continue;
      if (best != nullptr && d > best->depth + 2) break;
      depth_ = d;
      return true;
    }
    phase_ = 2;
  }
  return false;
}

void Autotuner::Record(double samples_per_s, int64_t memory_bytes) {
  if (settled_) return;
  trials_.push_back(
      AutotuneTrial{threads_, depth_, samples_per_s, memory_bytes});
  if (Advance()) return;
  const AutotuneTrial* best = Best();
  if (best == nullptr) {
    // Every trial passed the memory budget: the smallest.
    threads_ = 1;
    depth_ = 1;
  } else {
    threads_ = best->threads;
    depth_ = best->depth;
  }
  settled_ = true;
}

}  // namespace actorflow::internal::pipeline
