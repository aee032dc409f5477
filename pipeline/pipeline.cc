#include "actorflow/pipeline.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actorflow/usable_cpus.h"
#include "pipeline/autotune.h"
#include "pipeline/elastic_lanes.h"
#include "pipeline/pipeline_held.h"
#include "pipeline/sample_ops.h"
#include "pipeline/skip_log.h"
#include "pipeline/stall_report.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

namespace pipeline = ::actorflow::internal::pipeline;

// The pipeline's kernels and what they share (internal: pipeline/).
using pipeline::BatchKernel;
using pipeline::FileReaderKernel;
using pipeline::IdxReaderKernel;
using pipeline::SampleDealers;
using pipeline::SampleOpNames;
using pipeline::SampleStageKernel;

// ---- views ----

absl::Span<const int64_t> OutputView::sample_shape(int64_t i) const {
  const int64_t rank = shapes_.shape()[1];
  const auto* dims = static_cast<const int64_t*>(shapes_.raw_data());
  return absl::Span<const int64_t>(dims + i * rank, rank);
}

absl::StatusOr<OutputView> BatchView::output(absl::string_view name) const {
  std::vector<std::string> names;
  for (const OutputView& out : outputs) {
    if (out.name() == name) return out;
    names.push_back(out.name());
  }
  return absl::NotFoundError(absl::StrCat(
      "no output '", name, "'; outputs: ", absl::StrJoin(names, ", ")));
}

// ---- the pipeline ----

Pipeline::Pipeline(PipelineOptions options)
    : options_(std::move(options)),
      log_(std::make_unique<pipeline::SkipLog>()),
      cursors_(std::make_unique<pipeline::LaneCursors>()) {}

Pipeline::~Pipeline() {
  held_.clear();  // borrowed registers go back before the session ends
  ready_.clear();
  session_.reset();
}

Pipeline& Pipeline::Add(OperatorDef def) {
  if (def.name.empty()) {
    def.name = def.outputs.empty() ? def.op : def.outputs[0];
  }
  ops_.push_back(std::move(def));
  return *this;
}

Pipeline& Pipeline::SetOutputs(std::vector<std::string> names) {
  output_names_ = std::move(names);
  return *this;
}

const Plan& Pipeline::plan() const { return plan_; }

std::vector<SkippedSample> Pipeline::skipped() const {
  return log_->Snapshot();
}

const RunTrace& Pipeline::trace() const {
  static const RunTrace kEmpty;
  return session_ ? session_->trace() : kEmpty;
}

absl::Status Pipeline::Build() {
  if (built_) return absl::FailedPreconditionError("Build: already built");
  absl::Status status = Compile();
  if (!status.ok()) return status;
  status = StartSession();
  if (!status.ok()) return status;
  built_ = true;
  stalls_since_ns_ = SteadyNowNs();
  if (options_.autotune) StartTuner();
  if (!options_.restore_from.empty()) {
    absl::StatusOr<CheckpointInfo> restored = Restore(options_.restore_from);
    if (!restored.ok()) return Fail(restored.status());
  }
  return absl::OkStatus();
}

absl::Status Pipeline::StartSession() {
  SessionOptions session_options;
  session_options.trace = options_.trace;
  session_options.stats = options_.stats;
  session_options.channel.spin_ns = options_.spin_ns;
  // A thread per stream while the workers fit in the usable CPUs: the
  // schedule, reader and batch (one stream beside the workers') then never
  // wait for a worker's act (a chunk's samples, milliseconds) to end, as
  // they do on shared threads, where the workers starved between chunks
  // (4 % of DALI's training recipe's images/s on 2 CPUs). Beyond the
  // usable CPUs the session's policy shares threads.
  session_options.share_cpu_threads =
      options_.num_threads > ProcessUsableCpus().count;
  session_options.probe = options_.probe;
  BindKernels(&session_options.kernels);
  auto session = Session::Create(plan_, std::move(session_options));
  if (!session.ok()) {
    return absl::Status(
        session.status().code(),
        absl::StrCat("pipeline plan: ", session.status().message()));
  }
  session_ = std::move(*session);
  return absl::OkStatus();
}

void Pipeline::BindKernels(KernelBindings* kernels) {
  pipeline::SkipLog* log = log_.get();
  const pipeline::LaneCursors* cursors = cursors_.get();
  kernels->Bind("pipeline.batch", [log, cursors] {
    return std::unique_ptr<Kernel>(new BatchKernel(log, cursors));
  });
  SampleDealers* dealers = dealers_.get();
  std::vector<std::string> stage_op_types = {"pipeline.chain"};
  for (const std::string& name : SampleOpNames()) {
    stage_op_types.push_back("pipeline." + name);
  }
  for (const std::string& op_type : stage_op_types) {
    kernels->Bind(op_type, [dealers] {
      return std::unique_ptr<Kernel>(new SampleStageKernel(dealers));
    });
  }
  std::atomic<int64_t>* counter = &chunks_read_;
  kernels->Bind("pipeline.file_reader", [counter] {
    auto reader = std::make_unique<FileReaderKernel>();
    reader->CountChunksInto(counter);
    return std::unique_ptr<Kernel>(std::move(reader));
  });
  kernels->Bind("pipeline.idx_reader", [counter] {
    auto reader = std::make_unique<IdxReaderKernel>();
    reader->CountChunksInto(counter);
    return std::unique_ptr<Kernel>(std::move(reader));
  });
}

// ---- running ----

absl::Status Pipeline::Fail(absl::Status status) {
  if (error_.ok()) error_ = std::move(status);
  return error_;
}

absl::Status Pipeline::Usable() const {
  if (!built_) {
    return absl::FailedPreconditionError("the pipeline is not built (Build)");
  }
  return error_;
}

bool Pipeline::MoreToIssue() const {
  if (!externals_.empty()) {
    // A chunk takes one fed batch from every external source.
    for (const ExternalSource& source : externals_) {
      if (source.fed.empty()) return false;
    }
    return true;
  }
  // An elastic epoch is the same number of batches on every rank; each
  // piece that was no batch calls for one more chunk.
  if (lanes_ != nullptr) {
    return next_chunk_ < lanes_->BatchesPerEpoch() + not_ready_;
  }
  if (next_chunk_ < chunks_per_epoch_) return true;
  // Samples held over for lack of a full batch need one more (final)
  // chunk, once everything issued has come back and gone out.
  return in_flight_ == 0 && ready_.empty() &&
         epoch_size_ - delivered_ - log_->CountInEpoch(epoch_) > 0;
}

absl::Status Pipeline::Pump() {
  // Batches already made (ready_) count against the prefetch.
  const int64_t ready = static_cast<int64_t>(ready_.size());
  // A tuned pipeline keeps its (tuned) depth in the making once asked for
  // a batch: the caller primed as many Run()s as the depth it started at.
  const int64_t wanted =
      tuner_ != nullptr && requested_ > 0 ? depth_ : requested_;
  while (in_flight_ + ready < depth_ && in_flight_ + ready < wanted &&
         MoreToIssue()) {
    const int64_t chunk = next_chunk_;
    const bool final = !externals_.empty() || chunk >= chunks_per_epoch_ - 1;
    const int64_t words[] = {epoch_, chunk, final ? 1 : 0};
    auto tensor = Tensor::FromValues<int64_t>({3}, words);
    // Blocking cannot hang: the schedule has depth_ + 1 registers, and only
    // a chunk that is not yet read (at most in_flight_ < depth_ of them)
    // holds one for longer than the trip back from the reader, which needs
    // nothing from the caller. (A TryFeed here could find every register
    // still on that trip and leave the chunk unscheduled until the caller's
    // next call, so Run() alone would not keep the prefetch going.)
    absl::Status fed = session_->Feed(kScheduleTask, *tensor);
    if (!fed.ok()) return Fail(fed);
    ++next_chunk_;
    ++in_flight_;
    for (ExternalSource& source : externals_) source.fed.pop_front();
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, TaskStats>> Pipeline::Stats() const {
  if (session_ == nullptr) {
    return absl::FailedPreconditionError("Stats: the pipeline is not built");
  }
  if (!options_.stats) {
    return absl::FailedPreconditionError(
        "Stats: PipelineOptions::stats is off");
  }
  return session_->Progress().tasks;
}

absl::Status Pipeline::Run() {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  ++requested_;
  return Pump();
}

absl::Status Pipeline::FeedInput(absl::string_view name, const Tensor& batch,
                                 const Tensor* shapes) {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  ExternalSource* source = nullptr;
  std::vector<std::string> names;
  for (ExternalSource& candidate : externals_) {
    if (candidate.name == name) source = &candidate;
    names.push_back(absl::StrCat("'", candidate.name, "'"));
  }
  if (source == nullptr) {
    return absl::NotFoundError(absl::StrCat(
        "FeedInput: no external source '", name, "'",
        names.empty() ? ""
        : names.size() == 1
            ? absl::StrCat(" (there is ", names[0], ")")
            : absl::StrCat(" (there are ", absl::StrJoin(names, ", "), ")")));
  }
  // At most depth_ fed ahead of Run and depth_ scheduled: the feed has
  // 2 * depth_ + 1 registers, so this Feed finds one free (or freed as the
  // source reads the scheduled ones) and never waits on the caller.
  if (static_cast<int64_t>(source->fed.size()) >= depth_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("FeedInput '", name, "': ", depth_,
                     " batches are fed and not yet scheduled; Run() first"));
  }
  if (batch.shape().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "FeedInput '", name, "': a batch has a first dimension (samples)"));
  }
  const int64_t n = batch.shape()[0];
  const int64_t rank = static_cast<int64_t>(batch.shape().size()) - 1;
  Tensor own_shapes(DT_INT64, {n, rank});
  if (shapes == nullptr) {
    auto rows = *own_shapes.mutable_data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < rank; ++k)
        rows[i * rank + k] = batch.shape()[k + 1];
    }
    shapes = &own_shapes;
  }
  ok = CheckSampleShapes(name, batch, *shapes);
  if (!ok.ok()) return ok;
  // The batch this one joins: every source's j-th fed batch makes chunk j.
  const size_t j = source->fed.size();
  for (const ExternalSource& other : externals_) {
    if (other.fed.size() > j && other.fed[j] != n) {
      return absl::InvalidArgumentError(absl::StrCat(
          "FeedInput '", name, "': ", n, " samples, but '", other.name,
          "' was fed ", other.fed[j], " for the same batch"));
    }
  }
  absl::Status fed = session_->Feed(source->feed, batch);
  if (absl::IsInvalidArgument(fed)) return fed;  // the batch does not fit
  if (!fed.ok()) return Fail(fed);
  // Checked above: only the session's failure can refuse it now.
  fed = session_->Feed(source->shape_feed, *shapes);
  if (!fed.ok()) return Fail(fed);
  source->fed.push_back(n);
  return absl::OkStatus();
}

absl::Status Pipeline::CheckSampleShapes(absl::string_view name,
                                         const Tensor& batch,
                                         const Tensor& shapes) {
  const int64_t n = batch.shape()[0];
  const int64_t rank = static_cast<int64_t>(batch.shape().size()) - 1;
  const auto where = [&] { return absl::StrCat("FeedInput '", name, "': "); };
  if (shapes.data_type() != DT_INT64 || shapes.shape().size() != 2 ||
      shapes.shape()[0] != n || shapes.shape()[1] != rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        where(), "the sample shapes must be int64 [", n, ", ", rank,
        "] (one row per sample), got ", DataTypeName(shapes.data_type()), " ",
        ShapeString(shapes.shape())));
  }
  auto rows = *shapes.data<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t k = 0; k < rank; ++k) {
      const int64_t dim = rows[i * rank + k];
      if (dim < 0 || dim > batch.shape()[k + 1]) {
        return absl::InvalidArgumentError(absl::StrCat(
            where(), "sample ", i, " claims dimension ", k, " = ", dim,
            ", outside the batch's box [0, ", batch.shape()[k + 1], "]"));
      }
    }
  }
  return absl::OkStatus();
}

void Pipeline::Abort(absl::Status status) {
  if (session_ != nullptr) session_->Abort(std::move(status));
}

absl::StatusOr<bool> Pipeline::FetchOne(Held* held) {
  for (const std::string& name : output_names_) {
    auto data = session_->FetchBorrowed(absl::StrCat("out.", name));
    if (!data.ok()) return Fail(data.status());
    auto shapes = session_->FetchBorrowed(absl::StrCat("out.", name, ".shape"));
    if (!shapes.ok()) return Fail(shapes.status());
    held->data.push_back(std::move(*data));
    held->shapes.push_back(std::move(*shapes));
  }
  --in_flight_;
  return held->data[0].view().shape()[0] > 0;
}

bool Pipeline::CountsAsBatch(int64_t chunk, bool full) {
  if (full) return true;
  if (lanes_ == nullptr) return false;
  if (chunk < lanes_->LastOwnChunk()) {
    ++not_ready_;
    return false;
  }
  return true;
}

absl::Status Pipeline::DrainInFlight() {
  while (in_flight_ > 0) {
    const int64_t chunk = next_chunk_ - in_flight_;
    Held borrowed;
    absl::StatusOr<bool> full = FetchOne(&borrowed);
    if (!full.ok()) return full.status();
    if (CountsAsBatch(chunk, *full)) ready_.push_back(CopyOut(borrowed));
  }
  return absl::OkStatus();
}

absl::StatusOr<BatchView> Pipeline::ShareOutputs() {
  if (built_ && error_.ok()) {
    absl::Status tuned = TuneStep();
    if (!tuned.ok()) return tuned;
  }
  const int64_t asked_ns = SteadyNowNs();
  absl::StatusOr<BatchView> view = NextOutputs();
  if (view.ok()) {
    caller_wait_ns_ += SteadyNowNs() - asked_ns;
    ++taken_batches_;
    taken_samples_ +=
        view->outputs.empty() ? 0 : view->outputs[0].num_samples();
  }
  return view;
}

absl::StatusOr<PipelineStalls> Pipeline::Stalls() {
  absl::StatusOr<std::map<std::string, TaskStats>> now = Stats();
  if (!now.ok()) return now.status();
  const int64_t now_ns = SteadyNowNs();
  PipelineStalls report = internal::pipeline::ReportStalls(
      stalls_stats_, *now, now_ns - stalls_since_ns_,
      taken_batches_ - stalls_batches_, taken_samples_ - stalls_samples_,
      caller_wait_ns_ - stalls_wait_ns_);
  stalls_stats_ = std::move(*now);
  stalls_since_ns_ = now_ns;
  stalls_batches_ = taken_batches_;
  stalls_samples_ = taken_samples_;
  stalls_wait_ns_ = caller_wait_ns_;
  return report;
}

absl::StatusOr<BatchView> Pipeline::NextOutputs() {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  if (static_cast<int>(held_.size()) >= depth_) {
    return absl::FailedPreconditionError(
        absl::StrCat("ShareOutputs: all ", depth_,
                     " prefetched batches are held; ReleaseOutputs first"));
  }
  if (requested_ == 0) {
    return absl::FailedPreconditionError(
        "no batch is scheduled: call Run() first");
  }
  while (true) {
    ok = Pump();
    if (!ok.ok()) return ok;
    if (in_flight_ == 0 && ready_.empty()) {
      for (const ExternalSource& source : externals_) {
        if (source.fed.empty()) {
          return absl::FailedPreconditionError(absl::StrCat(
              "no input: FeedInput a batch for '", source.name, "' first"));
        }
      }
      requested_ = 0;
      const int64_t skipped = log_->CountInEpoch(epoch_);
      return absl::OutOfRangeError(absl::StrCat(
          "end of epoch ", epoch_, ": ", batches_, " batches, ", delivered_,
          " samples", skipped ? absl::StrCat(" (", skipped, " skipped)") : "",
          "; Reset() starts the next epoch"));
    }
    std::unique_ptr<Held> held;
    if (!ready_.empty()) {
      held = std::move(ready_.front());
      ready_.pop_front();
    } else {
      held = std::make_unique<Held>();
      const int64_t chunk = next_chunk_ - in_flight_;  // the one fetched
      auto full = FetchOne(held.get());
      if (!full.ok()) return full.status();
      if (!CountsAsBatch(chunk, *full)) continue;
    }
    --requested_;
    ok = Pump();  // keep the prefetch full while the caller works
    if (!ok.ok()) return ok;
    held->epoch = epoch_;
    held->index = batches_++;
    BatchView view;
    view.epoch = held->epoch;
    view.index = held->index;
    for (size_t k = 0; k < output_names_.size(); ++k) {
      OutputView out;
      out.name_ = output_names_[k];
      out.data_ = held->data_view(k);
      out.shapes_ = held->shapes_view(k);
      view.outputs.push_back(std::move(out));
    }
    delivered_ += view.outputs[0].num_samples();
    held_.push_back(std::move(held));
    return view;
  }
}

absl::Status Pipeline::ReleaseOutputs() {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  if (held_.empty()) {
    return absl::FailedPreconditionError("ReleaseOutputs: no batch is held");
  }
  held_.pop_front();
  return absl::OkStatus();
}

absl::StatusOr<BatchView> Pipeline::Outputs() {
  absl::Status ok = Usable();
  if (!ok.ok()) return ok;
  held_.clear();
  return ShareOutputs();
}

namespace {

// A tensor of the view's type and shape holding a copy of its bytes.
Tensor CopyOf(const ConstTensorView& view) {
  Tensor copy(view.data_type(), {view.shape().begin(), view.shape().end()});
  if (view.byte_size() > 0) {
    std::memcpy(copy.mutable_raw_data(), view.raw_data(), view.byte_size());
  }
  return copy;
}

}  // namespace

absl::StatusOr<TakenBatch> Pipeline::TakeOutputs() {
  absl::StatusOr<BatchView> view = Outputs();
  if (!view.ok()) return view.status();
  Held& held = *held_.back();
  TakenBatch batch;
  batch.epoch = view->epoch;
  batch.index = view->index;
  for (size_t k = 0; k < view->outputs.size(); ++k) {
    const OutputView& out = view->outputs[k];
    TakenOutput taken;
    taken.name = out.name();
    taken.shapes = CopyOf(out.shapes());
    ConstTensorView from = out.data();
    taken.data.data = from.raw_data();
    taken.data.data_type = from.data_type();
    taken.data.shape.assign(from.shape().begin(), from.shape().end());
    if (held.owned()) {
      // Copied out of its register before (a checkpoint drained it): the
      // copy itself goes.
      taken.data.owner =
          std::shared_ptr<OwnedTensor>(std::move(held.owned_data[k]));
    } else if (absl::StatusOr<TakenTensor> over = held.data[k].TakeOver();
               over.ok()) {
      taken.data = *std::move(over);
    } else {
      // A register that cannot give its memory away: a copy, the caller's
      // alike.
      auto copy = std::make_shared<Tensor>(CopyOf(from));
      taken.data.data = copy->raw_data();
      taken.data.owner = std::move(copy);
    }
    batch.outputs.push_back(std::move(taken));
  }
  held_.pop_back();
  return batch;
}

absl::Status Pipeline::Drain() {
  held_.clear();
  ready_.clear();
  while (in_flight_ > 0) {
    Held discard;
    auto fetched = FetchOne(&discard);
    if (!fetched.ok()) return fetched.status();
  }
  return absl::OkStatus();
}

absl::Status Pipeline::Finish() {
  absl::Status ok = Usable();
  if (ok.ok()) ok = Drain();
  if (!ok.ok()) return ok;
  if (session_->running()) {
    ok = session_->CloseFeeds();
    if (ok.ok()) ok = session_->Wait().status();
    if (!ok.ok()) return Fail(ok);
  }
  error_ = absl::FailedPreconditionError("the pipeline has finished");
  return absl::OkStatus();
}

absl::Status Pipeline::Reset() {
  absl::Status ok = Usable();
  if (ok.ok()) ok = Drain();
  if (!ok.ok()) return ok;
  ++epoch_;
  next_chunk_ = 0;
  not_ready_ = 0;
  requested_ = 0;
  delivered_ = 0;
  batches_ = 0;
  return absl::OkStatus();
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
