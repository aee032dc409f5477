// The pipeline's tuner (PipelineOptions::autotune): measures the images/s
// the caller gets over windows of batches and moves to the worker count and
// prefetch depth pipeline/autotune.h names next, rebuilding the plan and
// session at a cut. The batches do not depend on either knob, so the
// stream goes on as it would have.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/pipeline.h"
#include "actorflow/session.h"
#include "actorflow/usable_cpus.h"
#include "pipeline/autotune.h"
#include "pipeline/elastic_lanes.h"
#include "pipeline/pipeline_held.h"
#include "pipeline/skip_log.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

namespace {

namespace pipeline = ::actorflow::internal::pipeline;

// A measuring window: at least this many batches and this long (a window
// of fast batches is a few milliseconds of noise otherwise); and the
// batches let pass after a change before one opens (the plan fills its
// registers; batches taken out of the old plan come without waiting).
constexpr int64_t kWindowBatches = 16;
constexpr int64_t kWindowNs = 50'000'000;
constexpr int64_t kWarmupBatches = 2;

// The process's resident memory in bytes (0 if /proc cannot tell).
int64_t ResidentBytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  long long pages = 0, resident = 0;
  const int read = std::fscanf(statm, "%lld %lld", &pages, &resident);
  std::fclose(statm);
  return read == 2 ? resident * sysconf(_SC_PAGESIZE) : 0;
}

}  // namespace

void Pipeline::StartTuner() {
  // External sources are fed by the caller batch by batch: their feeds
  // are not rebuilt, so such a pipeline runs as configured.
  if (!externals_.empty()) return;
  const int cpus = options_.autotune_cpus > 0
                       ? options_.autotune_cpus
                       : std::max(ProcessUsableCpus().count, 1);
  tuner_ = std::make_unique<pipeline::Autotuner>(
      cpus, options_.autotune_memory_bytes, options_.num_threads,
      options_.prefetch_depth);
  tune_warmup_ = kWarmupBatches;
  rss_at_build_ = ResidentBytes();
}

AutotuneReport Pipeline::Autotune() const {
  AutotuneReport report;
  report.threads = options_.num_threads;
  report.depth = options_.prefetch_depth;
  if (tuner_ == nullptr) return report;
  report.enabled = true;
  report.settled = tuner_->settled();
  report.batches_to_settle = tune_settled_at_;
  report.trials = tuner_->trials();
  return report;
}

absl::Status Pipeline::TuneStep() {
  if (tuner_ == nullptr || tuner_->settled() || !held_.empty()) {
    return absl::OkStatus();
  }
  const int64_t now = SteadyNowNs();
  if (tune_warmup_ > 0) {
    // Batches already made come without waiting: not measured.
    if (ready_.empty()) --tune_warmup_;
    if (tune_warmup_ == 0) {
      tune_window_batches_ = taken_batches_;
      tune_window_samples_ = taken_samples_;
      tune_window_ns_ = now;
    }
    return absl::OkStatus();
  }
  if (taken_batches_ - tune_window_batches_ < kWindowBatches ||
      now - tune_window_ns_ < kWindowNs) {
    return absl::OkStatus();
  }
  const double seconds = static_cast<double>(now - tune_window_ns_) / 1e9;
  const double rate =
      seconds > 0
          ? static_cast<double>(taken_samples_ - tune_window_samples_) / seconds
          : 0;
  tuner_->Record(rate, std::max<int64_t>(ResidentBytes() - rss_at_build_, 0));
  if (tuner_->settled()) tune_settled_at_ = taken_batches_;
  tune_warmup_ = kWarmupBatches;
  if (tuner_->threads() == options_.num_threads &&
      tuner_->depth() == options_.prefetch_depth) {
    return absl::OkStatus();
  }
  return Reconfigure(tuner_->threads(), tuner_->depth());
}

absl::Status Pipeline::Reconfigure(int threads, int depth) {
  // Every scheduled batch out of the plan into memory of its own; the
  // plan then comes to rest, and these go out first.
  absl::Status drained = DrainInFlight();
  if (!drained.ok()) return drained;
  // The kernels' state, carried over in memory. An elastic pipeline's
  // follows from its place and skip log instead (as at a restore).
  CheckpointData state;
  if (lanes_ == nullptr) {
    absl::StatusOr<CheckpointData> cut = session_->Snapshot();
    if (!cut.ok()) return Fail(cut.status());
    state = std::move(*cut);
  }
  absl::Status ok = session_->CloseFeeds();
  if (ok.ok()) ok = session_->Wait().status();
  if (!ok.ok()) return Fail(ok);
  session_.reset();
  options_.num_threads = threads;
  options_.prefetch_depth = depth;
  ok = Compile();
  if (ok.ok()) ok = StartSession();
  if (!ok.ok()) return Fail(ok);
  if (lanes_ == nullptr) {
    RestoreOptions restore;
    restore.caller_checks_plan = true;
    ok = session_->RestoreFrom(state, "(autotune)", restore);
    if (!ok.ok()) return Fail(ok);
  } else {
    // The batches in ready_ count as handed out: the lanes go on after
    // them.
    const int64_t made = batches_ + static_cast<int64_t>(ready_.size());
    std::vector<int64_t> cursors =
        pipeline::CursorsAfter(*lanes_, epoch_, made, log_->Snapshot());
    log_->Replace(
        pipeline::SkipsBefore(*lanes_, epoch_, cursors, log_->Snapshot()));
    cursors_->Set(epoch_, std::move(cursors));
    next_chunk_ = made;
    not_ready_ = 0;
  }
  // The new session counts its acts from zero: Stalls() starts a window.
  stalls_stats_.clear();
  stalls_since_ns_ = SteadyNowNs();
  stalls_batches_ = taken_batches_;
  stalls_samples_ = taken_samples_;
  stalls_wait_ns_ = caller_wait_ns_;
  return absl::OkStatus();
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
