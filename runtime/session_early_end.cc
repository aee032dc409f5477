// Session::HoldSources and EndRunAt: a run stopped at a piece that callers
// outside it agreed on (see actorflow/session.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/session_impl.h"

namespace actorflow::internal {

absl::StatusOr<int64_t> SessionImpl::HoldSources(absl::Duration timeout) {
  MutexLock hold(&hold_mu_);
  const int n = static_cast<int>(actors_.size());
  int64_t first = 0;
  {
    MutexLock lock(&mu_);
    if (has_feeds_) {
      return absl::FailedPreconditionError(
          "HoldSources: the plan has feeds; its caller decides where runs "
          "end (CloseFeeds)");
    }
    if (!running_) return next_piece_;
    first = next_piece_;
    monitor_->SetHolding(true);
    held_at_.assign(n, -1);
    holding_.Reset(n);
    for (int a = 0; a < n; ++a) {
      if (!SendCmd(a, ActorCmd::kHoldSupply).ok()) holding_.Decrement();
    }
  }
  // Outside mu_: an actor thread may need it (a failure) before it answers.
  if (!holding_.WaitFor(timeout)) {
    return absl::DeadlineExceededError(absl::StrCat(
        "HoldSources: a source did not stop within ",
        absl::FormatDuration(timeout), " (a kernel still running?)"));
  }
  int64_t frontier = first;
  for (int64_t piece : held_at_) frontier = std::max(frontier, piece);
  return frontier;
}

absl::Status SessionImpl::EndRunAt(int64_t piece) {
  MutexLock lock(&mu_);
  if (!running_) return absl::OkStatus();
  piece = std::max(piece, next_piece_);
  for (int64_t cut : run_cuts_) {
    if (cut >= piece) {
      return absl::FailedPreconditionError(
          absl::StrCat("EndRunAt(", piece, "): the run takes a snapshot at ",
                       cut, ", at or past that piece"));
    }
  }
  // Past the run's end: the hold is released all the same.
  piece = std::min(piece, next_piece_ + pieces_);
  pieces_ = piece - next_piece_;
  // Every source is held on its own until its kEndSupply, which must find
  // the flag down: nothing else may wake the source after it.
  monitor_->SetHolding(false);
  for (int a = 0; a < static_cast<int>(actors_.size()); ++a) {
    absl::Status sent = bus_->Send(ActorMsg::EndSupply(a, piece));
    if (!sent.ok()) {
      sent = absl::InternalError(absl::StrCat("runtime: message to actor ", a,
                                              " refused: ", sent.message()));
      monitor_->ReportFailure(sent);
      return sent;
    }
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal
