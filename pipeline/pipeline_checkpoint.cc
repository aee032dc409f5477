// Pipeline checkpoints (pipeline.h, docs/checkpoints.md): the session's
// state at a cut where every scheduled batch has been taken out of the
// plan, plus the pipeline's counters, those batches and its skip log.
#include <cstring>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "actorflow/pipeline.h"
#include "pipeline/pipeline_definition.h"
#include "pipeline/pipeline_held.h"
#include "pipeline/skip_log.h"
#include "pipeline/skipped_state.h"
#include "plan/plan_signature.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

namespace {

// The pipeline's own entries in a checkpoint's user state.
constexpr char kCounters[] =
    "pipeline.counters";  // epoch, chunk, samples, batches
constexpr char kReady[] = "pipeline.ready";

std::string ReadyName(size_t i, size_t k, const char* what) {
  return absl::StrCat("pipeline.ready.", i, ".", k, ".", what);
}

void AddView(KernelState* state, const std::string& name,
             ConstTensorView view) {
  state->Add(name, view.data_type(),
             std::vector<int64_t>(view.shape().begin(), view.shape().end()),
             view.raw_data());
  state->AddValues<int64_t>(
      name + "_max",
      absl::MakeConstSpan(view.max_shape().data(), view.max_shape().size()));
}

}  // namespace

std::unique_ptr<Pipeline::Held> Pipeline::CopyOut(const Held& held) {
  auto copy = std::make_unique<Held>();
  copy->epoch = held.epoch;
  copy->index = held.index;
  const size_t n = held.owned() ? held.owned_data.size() : held.data.size();
  for (size_t k = 0; k < n; ++k) {
    for (bool data : {true, false}) {
      ConstTensorView view = data ? held.data_view(k) : held.shapes_view(k);
      (data ? copy->owned_data : copy->owned_shapes)
          .push_back(std::make_unique<OwnedTensor>(
              view.name(), view.data_type(), view.max_shape(), view.shape(),
              view.raw_data(), static_cast<size_t>(view.byte_size())));
    }
  }
  return copy;
}

absl::StatusOr<CheckpointInfo> Pipeline::Checkpoint(
    const std::string& root, const CheckpointOptions& options) {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  if (lanes_ != nullptr) return CheckpointLanes(root, options);
  for (const ExternalSource& source : externals_) {
    if (!source.fed.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Checkpoint: ", source.fed.size(), " batch(es) fed to '", source.name,
          "' wait for their Run(); Run() them first"));
    }
  }
  if (in_flight_ > 0 && static_cast<int>(held_.size()) >= depth_) {
    return absl::FailedPreconditionError(
        absl::StrCat("Checkpoint: the caller holds all ", depth_,
                     " prefetched batches; ReleaseOutputs first"));
  }
  const int64_t start = SteadyNowNs();
  // Every scheduled batch out of the plan into memory of its own: the plan
  // then comes to rest, and these go out first, now and after a restore.
  absl::Status drained = DrainInFlight();
  if (!drained.ok()) return drained;
  absl::StatusOr<CheckpointData> cut = session_->Snapshot(options.timeout);
  if (!cut.ok()) return cut.status();
  cut->user = options.user;
  KernelState& user = cut->user;
  const int64_t counters[] = {epoch_, next_chunk_, delivered_, batches_};
  user.AddValues<int64_t>(kCounters, counters);
  user.AddScalar<int64_t>(kReady, static_cast<int64_t>(ready_.size()));
  for (size_t i = 0; i < ready_.size(); ++i) {
    for (size_t k = 0; k < ready_[i]->owned_data.size(); ++k) {
      AddView(&user, ReadyName(i, k, "data"), ready_[i]->data_view(k));
      AddView(&user, ReadyName(i, k, "shapes"), ready_[i]->shapes_view(k));
    }
  }
  internal::pipeline::SaveSkipped(log_->Snapshot(), &user);
  return Write(root, *cut, options.keep_last, start);
}

absl::StatusOr<CheckpointInfo> Pipeline::Write(const std::string& root,
                                               const CheckpointData& data,
                                               int keep_last,
                                               int64_t started_ns) {
  CheckpointInfo info;
  info.pause_ms = static_cast<double>(SteadyNowNs() - started_ns) / 1e6;
  CheckpointWriteOptions write;
  write.keep_last = keep_last;
  absl::StatusOr<WrittenCheckpoint> written =
      WriteCheckpoint(root, data, write);
  if (!written.ok()) return written.status();
  info.path = written->path;
  info.piece = written->piece;
  info.bytes = written->bytes;
  info.write_ms = written->write_ms;
  return info;
}

absl::StatusOr<CheckpointInfo> Pipeline::RestoreSession(
    const std::string& dir) {
  absl::StatusOr<std::string> path = ResolveCheckpoint(dir);
  if (!path.ok()) return path.status();
  absl::StatusOr<CheckpointData> data = ReadCheckpoint(*path);
  if (!data.ok()) return data.status();
  // A checkpoint of this pipeline at another num_threads has other worker
  // tasks: the pipeline's definition decides, and the session only matches
  // the states kept to their tasks.
  const auto saved = internal::pipeline::PipelineDefinition(
      std::vector<TaskSignature>(data->plan.begin(), data->plan.end()),
      /*elastic=*/false);
  const auto here = internal::pipeline::PipelineDefinition(
      internal::SignPlan(plan_), /*elastic=*/false);
  if (internal::SignatureFingerprint(saved) !=
      internal::SignatureFingerprint(here)) {
    std::string diff = internal::DiffSignatures(
        saved, std::vector<TaskSignature>(here.begin(), here.end()));
    if (diff.empty()) diff = "the pipelines' fingerprints differ";
    return absl::FailedPreconditionError(
        absl::StrCat("checkpoint '", *path, "' is of another plan: ", diff));
  }
  RestoreOptions options;
  options.caller_checks_plan = true;
  absl::Status restored = session_->RestoreFrom(*data, *path, options);
  if (!restored.ok()) return restored;
  CheckpointInfo info;
  info.path = *path;
  info.piece = data->piece;
  info.user = std::move(data->user);
  return info;
}

absl::Status Pipeline::CanRestore() const {
  if (!built_) {
    return absl::FailedPreconditionError("Restore: Build the pipeline first");
  }
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  bool fed = false;
  for (const ExternalSource& source : externals_) fed |= !source.fed.empty();
  if (epoch_ != 0 || next_chunk_ != 0 || requested_ != 0 || in_flight_ != 0 ||
      !held_.empty() || !ready_.empty() || fed) {
    return absl::FailedPreconditionError(
        "Restore: after Build, before the first Run or FeedInput");
  }
  return absl::OkStatus();
}

absl::StatusOr<CheckpointInfo> Pipeline::Restore(
    const std::vector<std::string>& dirs) {
  if (lanes_ != nullptr) return RestoreLanes(dirs);
  if (dirs.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "Restore: ", dirs.size(),
        " directories; only an elastic pipeline (a reader with attr "
        "'elastic') resumes from several ranks' checkpoints"));
  }
  return Restore(dirs[0]);
}

absl::StatusOr<CheckpointInfo> Pipeline::Restore(const std::string& dir) {
  absl::Status ok = CanRestore();
  if (!ok.ok()) return ok;
  if (lanes_ != nullptr) return RestoreLanes({dir});
  absl::StatusOr<CheckpointInfo> info = RestoreSession(dir);
  if (!info.ok()) return info.status();
  const KernelState& user = info->user;
  auto malformed = [&](const absl::Status& status) {
    return absl::DataLossError(
        absl::StrCat("checkpoint '", info->path,
                     "': the pipeline's entries: ", status.message()));
  };
  int64_t counters[4];
  ok = user.Read<int64_t>(kCounters, absl::MakeSpan(counters));
  if (!ok.ok()) return malformed(ok);
  auto ready = user.Scalar<int64_t>(kReady);
  if (!ready.ok()) return malformed(ready.status());
  if (*ready < 0 || *ready > depth_) {
    return malformed(absl::InvalidArgumentError(absl::StrCat(
        *ready, " prefetched batches, more than the depth ", depth_)));
  }
  std::deque<std::unique_ptr<Held>> batches;
  for (int64_t i = 0; i < *ready; ++i) {
    auto held = std::make_unique<Held>();
    held->epoch = counters[0];
    held->index = counters[3] + i;
    for (size_t k = 0; k < output_names_.size(); ++k) {
      for (const char* what : {"data", "shapes"}) {
        const std::string name = ReadyName(i, k, what);
        const StateEntry* entry = user.Find(name);
        const StateEntry* max = user.Find(name + "_max");
        if (entry == nullptr || max == nullptr || max->data_type != DT_INT64 ||
            max->elem_cnt() != static_cast<int64_t>(entry->shape.size())) {
          return malformed(
              absl::NotFoundError(absl::StrCat("'", name, "' is missing")));
        }
        std::vector<int64_t> max_shape(max->elem_cnt());
        std::memcpy(max_shape.data(), max->bytes.data(), max->bytes.size());
        (std::string(what) == "data" ? held->owned_data : held->owned_shapes)
            .push_back(std::make_unique<OwnedTensor>(
                absl::StrCat("out_", output_names_[k]), entry->data_type,
                max_shape, entry->shape, entry->bytes.data(),
                entry->bytes.size()));
      }
    }
    batches.push_back(std::move(held));
  }
  absl::StatusOr<std::vector<SkippedSample>> skipped =
      internal::pipeline::LoadSkipped(user);
  if (!skipped.ok()) return malformed(skipped.status());
  epoch_ = counters[0];
  next_chunk_ = counters[1];
  delivered_ = counters[2];
  batches_ = counters[3];
  ready_ = std::move(batches);
  log_->Replace(std::move(*skipped));
  // What the program saved is the caller's; the pipeline's own stays here.
  KernelState own;
  for (const StateEntry& entry : user.entries()) {
    if (!absl::StartsWith(entry.name, "pipeline.")) (void)own.AddEntry(entry);
  }
  info->user = std::move(own);
  return info;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
