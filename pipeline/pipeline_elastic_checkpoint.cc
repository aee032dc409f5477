// Checkpoints of an elastic pipeline (pipeline.h, docs/pipelines.md "At
// scale"): not the session's state but the pipeline's place in its global
// schedule (pipeline/elastic_lanes.h), which every rank count shares: the
// epoch, the batches handed out, and the samples its lanes skipped. A
// restore at another number of ranks gathers the skips of the lanes it now
// owns from every old rank's checkpoint and starts each lane where the
// batches handed out left it.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actorflow/checkpoint.h"
#include "actorflow/pipeline.h"
#include "pipeline/elastic_lanes.h"
#include "pipeline/pipeline_definition.h"
#include "pipeline/skip_log.h"
#include "pipeline/skipped_state.h"
#include "plan/plan_signature.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

namespace {

namespace pipeline = ::actorflow::internal::pipeline;

// int64 [6]: lanes, first lane, lanes owned, positions, epoch, batches.
constexpr char kPlace[] = "pipeline.elastic";

struct RankCheckpoint {
  std::string path;
  CheckpointData data;
  pipeline::LaneLayout lanes;
  int64_t epoch = 0, batches = 0;
};

absl::StatusOr<RankCheckpoint> ReadRank(const std::string& path) {
  absl::StatusOr<CheckpointData> data = ReadCheckpoint(path);
  if (!data.ok()) return data.status();
  RankCheckpoint rank;
  rank.path = path;
  int64_t place[6];
  absl::Status ok = data->user.Read<int64_t>(kPlace, absl::MakeSpan(place));
  if (!ok.ok()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "checkpoint '", path, "' is not of an elastic pipeline (no '", kPlace,
        "': ", ok.message(), ")"));
  }
  rank.lanes = pipeline::LaneLayout{place[0], place[1], place[2], place[3]};
  rank.epoch = place[4];
  rank.batches = place[5];
  rank.data = std::move(*data);
  return rank;
}

// The checkpoint to take from each root: the newest piece (global batch)
// that every root has; a root that is itself a checkpoint is that one.
absl::StatusOr<std::vector<std::string>> CommonCheckpoints(
    const std::vector<std::string>& dirs) {
  std::vector<std::map<int64_t, std::string>> found;
  for (const std::string& dir : dirs) {
    std::map<int64_t, std::string> pieces;
    absl::StatusOr<std::string> self = ResolveCheckpoint(dir);
    absl::StatusOr<std::vector<std::pair<int64_t, std::string>>> listed =
        ListCheckpoints(dir);
    if (!listed.ok()) return listed.status();
    if (listed->empty() && self.ok()) {
      absl::StatusOr<CheckpointData> data = ReadCheckpoint(*self);
      if (!data.ok()) return data.status();
      pieces[data->piece] = *self;
    }
    for (const auto& [piece, path] : *listed) pieces[piece] = path;
    if (pieces.empty()) {
      return absl::NotFoundError(
          absl::StrCat("Restore: no checkpoint under '", dir, "'"));
    }
    found.push_back(std::move(pieces));
  }
  for (auto it = found[0].rbegin(); it != found[0].rend(); ++it) {
    std::vector<std::string> paths;
    for (const auto& pieces : found) {
      auto at = pieces.find(it->first);
      if (at == pieces.end()) break;
      paths.push_back(at->second);
    }
    if (paths.size() == dirs.size()) return paths;
  }
  std::vector<std::string> listing;
  for (size_t i = 0; i < dirs.size(); ++i) {
    std::vector<std::string> pieces;
    for (const auto& [piece, path] : found[i]) {
      pieces.push_back(absl::StrCat(piece));
    }
    listing.push_back(absl::StrCat("'", dirs[i], "' has batches ",
                                   absl::StrJoin(pieces, ", ")));
  }
  return absl::NotFoundError(absl::StrCat(
      "Restore: no batch that every rank's checkpoint directory has a "
      "checkpoint of (",
      absl::StrJoin(listing, "; "), ")"));
}

}  // namespace

absl::StatusOr<CheckpointInfo> Pipeline::CheckpointLanes(
    const std::string& root, const CheckpointOptions& options) {
  const int64_t start = SteadyNowNs();
  CheckpointData data;
  // A global batch count: the same on every rank at the same batch, and
  // growing, so that the checkpoints of a root sort by it.
  data.piece = epoch_ * lanes_->BatchesPerEpoch() + batches_;
  const std::vector<TaskSignature> signature = internal::SignPlan(plan_);
  data.plan.assign(signature.begin(), signature.end());
  data.user = options.user;
  const int64_t place[] = {lanes_->lanes,     lanes_->first, lanes_->own,
                           lanes_->positions, epoch_,        batches_};
  data.user.AddValues<int64_t>(kPlace, place);
  // Skips logged past what went out (the batch kernel runs ahead of the
  // caller) are dropped again at a restore, which reads them anew.
  pipeline::SaveSkipped(log_->Snapshot(), &data.user);
  return Write(root, data, options.keep_last, start);
}

absl::StatusOr<CheckpointInfo> Pipeline::RestoreLanes(
    const std::vector<std::string>& dirs) {
  absl::Status ok = CanRestore();
  if (!ok.ok()) return ok;
  if (dirs.empty()) {
    return absl::InvalidArgumentError("Restore: no checkpoint directory");
  }
  absl::StatusOr<std::vector<std::string>> paths = CommonCheckpoints(dirs);
  if (!paths.ok()) return paths.status();
  const auto here = pipeline::PipelineDefinition(internal::SignPlan(plan_),
                                                 /*elastic=*/true);
  std::vector<RankCheckpoint> ranks;
  for (const std::string& path : *paths) {
    absl::StatusOr<RankCheckpoint> rank = ReadRank(path);
    if (!rank.ok()) return rank.status();
    const pipeline::LaneLayout& saved = rank->lanes;
    if (saved.lanes != lanes_->lanes || saved.positions != lanes_->positions) {
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint '", path, "' has a global batch of ", saved.lanes,
          " over ", saved.positions, " samples an epoch; this pipeline's is ",
          lanes_->lanes, " over ", lanes_->positions,
          " (batch_size x num_shards must stay the same)"));
    }
    const auto saved_definition = pipeline::PipelineDefinition(
        std::vector<TaskSignature>(rank->data.plan.begin(),
                                   rank->data.plan.end()),
        /*elastic=*/true);
    if (internal::SignatureFingerprint(saved_definition) !=
        internal::SignatureFingerprint(here)) {
      std::string diff = internal::DiffSignatures(
          saved_definition,
          std::vector<TaskSignature>(here.begin(), here.end()));
      if (diff.empty()) diff = "the pipelines' fingerprints differ";
      return absl::FailedPreconditionError(absl::StrCat(
          "checkpoint '", path, "' is of another pipeline: ", diff));
    }
    ranks.push_back(std::move(*rank));
  }
  // The old ranks' lanes must cover the global batch once.
  std::sort(ranks.begin(), ranks.end(),
            [](const RankCheckpoint& a, const RankCheckpoint& b) {
              return a.lanes.first < b.lanes.first;
            });
  int64_t covered = 0;
  for (const RankCheckpoint& rank : ranks) {
    if (rank.lanes.first != covered) {
      return absl::FailedPreconditionError(absl::StrCat(
          "Restore: the checkpoints cover lanes [0, ", covered, ") and then ",
          rank.lanes.first < covered ? "again from " : "only from ",
          rank.lanes.first, " ('", rank.path, "') of the global batch's ",
          lanes_->lanes, ": give the checkpoint directory of every rank once"));
    }
    covered += rank.lanes.own;
  }
  if (covered != lanes_->lanes) {
    return absl::FailedPreconditionError(
        absl::StrCat("Restore: the checkpoints cover lanes [0, ", covered,
                     ") of the ", "global batch's ", lanes_->lanes,
                     ": give the checkpoint directory of every rank"));
  }
  const int64_t epoch = ranks[0].epoch, batches = ranks[0].batches;
  std::vector<SkippedSample> all;
  for (const RankCheckpoint& rank : ranks) {
    absl::StatusOr<std::vector<SkippedSample>> log =
        pipeline::LoadSkipped(rank.data.user);
    if (!log.ok()) {
      return absl::DataLossError(absl::StrCat("checkpoint '", rank.path,
                                              "': ", log.status().message()));
    }
    all.insert(all.end(), log->begin(), log->end());
  }
  std::vector<int64_t> cursors =
      pipeline::CursorsAfter(*lanes_, epoch, batches, all);
  // This rank's lanes' skips up to their cursors (earlier epochs' too);
  // those past a cursor were logged ahead of what went out, and the
  // resumed run reads them again.
  std::vector<SkippedSample> log =
      pipeline::SkipsBefore(*lanes_, epoch, cursors, std::move(all));
  std::sort(log.begin(), log.end(),
            [](const SkippedSample& a, const SkippedSample& b) {
              return std::tie(a.epoch, a.position) <
                     std::tie(b.epoch, b.position);
            });
  delivered_ = 0;
  for (int64_t l = 0; l < lanes_->own; ++l) delivered_ += cursors[l];
  for (const SkippedSample& sample : log) delivered_ -= sample.epoch == epoch;
  log_->Replace(std::move(log));
  cursors_->Set(epoch, std::move(cursors));
  epoch_ = epoch;
  batches_ = batches;
  next_chunk_ = batches;  // every lane's cursor is at or past it
  not_ready_ = 0;
  CheckpointInfo info;
  info.path = (*paths)[0];
  info.piece = ranks[0].data.piece;
  for (const RankCheckpoint& rank : ranks) {
    if (rank.path != (*paths)[0]) continue;
    // What the program saved is the caller's; the pipeline's own stays.
    for (const StateEntry& entry : rank.data.user.entries()) {
      if (entry.name.rfind("pipeline.", 0) != 0)
        (void)info.user.AddEntry(entry);
    }
  }
  return info;
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
