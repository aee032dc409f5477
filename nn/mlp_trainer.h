#ifndef ACTORFLOW_NN_MLP_TRAINER_H_
#define ACTORFLOW_NN_MLP_TRAINER_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/run_trace.h"
#include "actorflow/session.h"
#include "nn/mlp_config.h"
#include "proto/plan.pb.h"

namespace actorflow::internal::nn {

// Runs the plan in a Session: Submit pieces (x [rows, inputs] float32,
// labels [rows] int32) or, with MlpConfig::data, Start them; Collect their
// results in order.
class MlpTrainer {
 public:
  static absl::StatusOr<std::unique_ptr<MlpTrainer>> Create(
      const MlpConfig& config, bool trace = false);

  // Feeds one piece; with `depth` pieces uncollected, collects the oldest
  // first (into the queue Collect reads). Not with MlpConfig::data.
  absl::Status Submit(const float* x, const int32_t* labels, int64_t rows,
                      bool train);
  // With MlpConfig::data: runs the schedule's next `pieces` pieces (< 0:
  // all that are left), as one run of the session. The previous run's
  // pieces must all have been collected; Start ends that run first.
  absl::Status Start(int64_t pieces = -1);
  // The same, with snapshots at `cuts` (schedule pieces strictly inside the
  // run) taken as the run goes by (Session::Start); TakeSnapshot collects
  // each, in order.
  absl::Status Start(int64_t pieces, std::vector<int64_t> cuts);
  absl::StatusOr<CheckpointData> TakeSnapshot(int64_t cut) {
    return session_->TakeSnapshot(cut, absl::InfiniteDuration());
  }
  // The oldest piece's result (waits for it).
  absl::StatusOr<PieceResult> Collect();
  int64_t pending() const {
    return static_cast<int64_t>(submitted_.size() + ready_.size());
  }
  // Ends the run (fed: every submitted piece must have been collected;
  // started: every piece) and joins the plan's work; trace() then holds
  // every act.
  absl::Status Finish();
  const RunTrace& trace() const { return session_->trace(); }
  const Plan& plan() const { return plan_; }
  // Checkpoints (Session::Snapshot): once every piece started so far has
  // gone through the plan, every weight, velocity and step count.
  absl::StatusOr<CheckpointData> Snapshot() { return session_->Snapshot(); }
  // Before the first Start or Submit: the state of checkpoint `dir` (see
  // Session::Restore); with MlpConfig::data the schedule goes on from the
  // checkpoint's piece.
  absl::StatusOr<CheckpointInfo> Restore(const std::string& dir);
  // With MlpConfig::data: its pieces.
  const MlpSchedule& schedule() const { return schedule_; }

 private:
  MlpTrainer() = default;
  absl::StatusOr<PieceResult> FetchOne(PieceResult result);

  MlpConfig config_;
  Plan plan_;
  MlpSchedule schedule_;
  std::unique_ptr<Session> session_;
  std::deque<PieceResult> submitted_;  // fed, not fetched
  std::deque<PieceResult> ready_;      // fetched, not collected
  int64_t started_ = -1;   // pieces the Starts ran so far (-1: none)
  int64_t collected_ = 0;  // of those
  bool running_ = false;   // a Start's run not yet waited for
  bool finished_ = false;
};

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_MLP_TRAINER_H_
