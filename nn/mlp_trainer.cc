#include "nn/mlp_trainer.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "actorflow/tensor.h"
#include "nn/mlp_plan.h"

namespace actorflow::internal::nn {

absl::StatusOr<std::unique_ptr<MlpTrainer>> MlpTrainer::Create(
    const MlpConfig& config, bool trace) {
  auto plan = BuildMlpPlan(config);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<MlpTrainer> trainer(new MlpTrainer());
  trainer->config_ = config;
  trainer->plan_ = *plan;
  if (config.data) {
    auto schedule = ScheduleOf(*config.data, config.batch_size);
    if (!schedule.ok()) return schedule.status();
    trainer->schedule_ = *schedule;
  }
  SessionOptions options;
  options.trace = trace;
  options.channel.spin_ns = config.spin_ns;
  auto session = Session::Create(std::move(*plan), std::move(options));
  if (!session.ok()) return session.status();
  trainer->session_ = std::move(*session);
  return trainer;
}

absl::Status MlpTrainer::Submit(const float* x, const int32_t* labels,
                                int64_t rows, bool train) {
  if (finished_) return absl::FailedPreconditionError("trainer: finished");
  if (config_.data) {
    return absl::FailedPreconditionError(
        "trainer: this plan reads its own data (MlpConfig::data): Start it");
  }
  if (rows < 0 || rows > config_.batch_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: a piece holds 0 to ", config_.batch_size,
                     " rows, got ", rows));
  }
  while (static_cast<int64_t>(submitted_.size()) >= config_.depth) {
    auto result = FetchOne(submitted_.front());
    submitted_.pop_front();
    if (!result.ok()) return result.status();
    ready_.push_back(*result);
  }
  const int64_t width = config_.inputs;
  auto xs = Tensor::FromValues<float>({rows, width},
                                      absl::MakeConstSpan(x, rows * width));
  auto ys =
      Tensor::FromValues<int32_t>({rows}, absl::MakeConstSpan(labels, rows));
  if (!xs.ok()) return xs.status();
  if (!ys.ok()) return ys.status();
  const Tensor none_x(DT_FLOAT32, {0, width});
  const Tensor none_y(DT_INT32, {0});
  for (const auto& [name, tensor] :
       std::vector<std::pair<std::string, const Tensor*>>{
           {"train.x", train ? &*xs : &none_x},
           {"train.y", train ? &*ys : &none_y},
           {"eval.x", train ? &none_x : &*xs},
           {"eval.y", train ? &none_y : &*ys}}) {
    absl::Status fed = session_->Feed(name, *tensor);
    if (!fed.ok()) return fed;
  }
  submitted_.push_back(PieceResult{train, rows, 0, 0});
  return absl::OkStatus();
}

absl::Status MlpTrainer::Start(int64_t pieces) { return Start(pieces, {}); }

absl::Status MlpTrainer::Start(int64_t pieces, std::vector<int64_t> cuts) {
  if (!config_.data) {
    return absl::FailedPreconditionError(
        "trainer: this plan is fed (no MlpConfig::data): Submit pieces");
  }
  if (finished_) return absl::FailedPreconditionError("trainer: finished");
  const int64_t total = config_.data->epochs * schedule_.period();
  const int64_t done = std::max<int64_t>(started_, 0);
  if (collected_ < done) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainer: collect the last run's pieces first (",
                     done - collected_, " left)"));
  }
  if (pieces < 0) pieces = total - done;
  if (pieces == 0 || done + pieces > total) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: ", pieces, " pieces asked for, ", total - done,
                     " left in the schedule"));
  }
  if (running_) {
    absl::Status ended = session_->Wait().status();
    running_ = false;
    if (!ended.ok()) return ended;
  }
  absl::Status started = session_->Start(pieces, std::move(cuts));
  if (!started.ok()) return started;
  running_ = true;
  started_ = done + pieces;
  return absl::OkStatus();
}

absl::StatusOr<CheckpointInfo> MlpTrainer::Restore(const std::string& dir) {
  if (started_ >= 0 || !submitted_.empty() || !ready_.empty() || finished_) {
    return absl::FailedPreconditionError(
        "trainer: restore before the first Start or Submit");
  }
  absl::StatusOr<CheckpointInfo> info = session_->Restore(dir);
  if (!info.ok()) return info.status();
  if (config_.data) {
    const int64_t total = config_.data->epochs * schedule_.period();
    if (info->piece > total) {
      return absl::FailedPreconditionError(
          absl::StrCat("trainer: checkpoint '", info->path, "' is at piece ",
                       info->piece, ", past the schedule's ", total));
    }
    started_ = collected_ = info->piece;
  }
  return info;
}

absl::StatusOr<PieceResult> MlpTrainer::FetchOne(PieceResult result) {
  auto train_loss = session_->Fetch("train.loss");
  if (!train_loss.ok()) return train_loss.status();
  auto eval_loss = session_->Fetch("eval.loss");
  if (!eval_loss.ok()) return eval_loss.status();
  auto correct = session_->Fetch("eval.correct");
  if (!correct.ok()) return correct.status();
  const Tensor& loss = result.train ? *train_loss : *eval_loss;
  result.loss_sum = (*loss.data<double>())[0];
  result.correct = (*correct->data<int64_t>())[0];
  return result;
}

absl::StatusOr<PieceResult> MlpTrainer::Collect() {
  if (started_ >= 0) {
    if (collected_ == started_) {
      return absl::FailedPreconditionError("trainer: every piece collected");
    }
    return FetchOne(schedule_.Piece(collected_++, config_.batch_size));
  }
  if (ready_.empty()) {
    if (submitted_.empty()) {
      return absl::FailedPreconditionError("trainer: nothing submitted");
    }
    PieceResult piece = submitted_.front();
    submitted_.pop_front();
    return FetchOne(piece);
  }
  PieceResult result = ready_.front();
  ready_.pop_front();
  return result;
}

absl::Status MlpTrainer::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  if (started_ >= 0) {
    while (collected_ < started_) {
      auto result = Collect();
      if (!result.ok()) return result.status();
    }
    if (!running_) return absl::OkStatus();
    running_ = false;
    return session_->Wait().status();
  }
  while (!submitted_.empty()) {
    auto result = FetchOne(submitted_.front());
    submitted_.pop_front();
    if (!result.ok()) return result.status();
    ready_.push_back(*result);
  }
  absl::Status closed = session_->CloseFeeds();
  if (!closed.ok()) return closed;
  return session_->Wait().status();
}

}  // namespace actorflow::internal::nn
