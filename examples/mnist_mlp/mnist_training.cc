#include "examples/mnist_mlp/mnist_training.h"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "actorflow/pipeline.h"
#include "nn/dense_math.h"
#include "pipeline/dataset.h"
#include "plan/plan_builder.h"
#include "runtime/checkpoint_writer.h"

namespace actorflow::internal::examples {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string DataDir(const MnistOptions& o) {
  return o.data_dir.empty() ? pipeline::FashionMnistDir() : o.data_dir;
}

std::string FilePath(const MnistOptions& o, bool train, bool images) {
  return absl::StrCat(
      DataDir(o), "/", train ? "train" : "t10k",
      images ? "-images-idx3-ubyte.gz" : "-labels-idx1-ubyte.gz");
}

// Any window at least the set's size shuffles the whole epoch.
constexpr int64_t kWholeEpoch = int64_t{1} << 40;

absl::StatusOr<std::unique_ptr<Pipeline>> MakePipeline(const MnistOptions& o,
                                                       bool train) {
  PipelineOptions options;
  options.batch_size = o.model.batch_size;
  options.num_threads = o.data_threads;
  options.prefetch_depth = o.prefetch;
  options.seed = o.data_seed;
  auto pipe = std::make_unique<Pipeline>(options);
  pipe->Add(OperatorDef{
      .op = "idx_reader",
      .name = train ? "train_reader" : "test_reader",
      .outputs = {"raw", "label"},
      .attrs = {{"images", StringAttr(FilePath(o, train, true))},
                {"labels", StringAttr(FilePath(o, train, false))},
                {"shuffle_window", IntAttr(train ? kWholeEpoch : 0)},
                {"limit", IntAttr(train ? o.train_limit : o.test_limit)}}});
  pipe->Add(OperatorDef{.op = "batch",
                        .inputs = {"raw", "label"},
                        .outputs = {"images", "labels"}});
  pipe->Add(OperatorDef{.op = "normalize",
                        .inputs = {"images"},
                        .outputs = {"x"},
                        .attrs = {{"mean", FloatListAttr({kPixelMean})},
                                  {"std", FloatListAttr({kPixelStd})}}});
  pipe->SetOutputs({"x", "labels"});
  absl::Status built = pipe->Build();
  if (!built.ok()) return built;
  return pipe;
}

// Sums results in piece order, as both trainers see them.
struct Tally {
  int64_t samples = 0;
  double loss = 0;
  int64_t correct = 0;
  // Samples added by this process (a resumed epoch's rate counts these).
  int64_t here = 0;
  void Add(const nn::PieceResult& r, TrainSummary* summary) {
    samples += r.rows;
    here += r.rows;
    loss += r.loss_sum;
    correct += r.correct;
    summary->pieces.push_back(r);
  }
};

void Finish(const EpochCallback& on_epoch, EpochReport report,
            const Tally& train, const Tally& test, TrainSummary* summary) {
  report.train_samples = train.samples;
  report.test_samples = test.samples;
  report.train_loss = train.samples ? train.loss / train.samples : 0;
  report.test_loss = test.samples ? test.loss / test.samples : 0;
  report.test_accuracy =
      test.samples ? static_cast<double>(test.correct) / test.samples : 0;
  report.samples_per_s =
      report.train_seconds > 0 ? train.here / report.train_seconds : 0;
  summary->epochs.push_back(report);
  if (on_epoch) on_epoch(report);
}

void Totals(TrainSummary* summary) {
  double samples = 0;
  double seconds = 0;
  for (const EpochReport& e : summary->epochs) {
    samples += e.samples_per_s * e.train_seconds;
    seconds += e.train_seconds;
  }
  summary->samples_per_s = seconds > 0 ? samples / seconds : 0;
}

absl::Status CheckInputs(const MnistOptions& o) {
  auto dims = pipeline::ReadIdxHeader(FilePath(o, true, true));
  if (!dims.ok()) return dims.status();
  if (dims->size() != 3 || (*dims)[1] * (*dims)[2] != o.model.inputs) {
    return absl::InvalidArgumentError(
        absl::StrCat(FilePath(o, true, true), ": images of ", (*dims)[1], "x",
                     (*dims)[2], " do not make ", o.model.inputs, " inputs"));
  }
  if (o.epochs < 1) {
    return absl::InvalidArgumentError("epochs: at least 1");
  }
  return nn::CheckConfig(o.model);
}

// Checked options, with the epoch's steps filled in (decay_per_epoch).
absl::StatusOr<MnistOptions> Resolve(MnistOptions o) {
  absl::Status ok = CheckInputs(o);
  if (!ok.ok()) return ok;
  auto dims = pipeline::ReadIdxHeader(FilePath(o, true, false));
  if (!dims.ok()) return dims.status();
  if (o.decay_per_epoch && !dims->empty()) {
    int64_t samples = (*dims)[0];
    if (o.train_limit > 0) samples = std::min(samples, o.train_limit);
    o.model.decay_steps = (samples + o.model.batch_size - 1) /
                          std::max<int64_t>(1, o.model.batch_size);
  }
  return o;
}

constexpr int kRunAhead = 16;

// What a checkpoint of the training holds beside the plan's state: the
// reports of the epochs done and the running totals of the one under way.
constexpr int kReportFields = 8;

void SaveProgress(const std::vector<EpochReport>& epochs, const Tally& train,
                  const Tally& test, double train_seconds, KernelState* user) {
  std::vector<double> reports;
  for (const EpochReport& e : epochs) {
    reports.insert(
        reports.end(),
        {static_cast<double>(e.epoch), e.train_loss, e.test_loss,
         e.test_accuracy, static_cast<double>(e.train_samples),
         static_cast<double>(e.test_samples), e.train_seconds, e.eval_seconds});
  }
  user->AddValues<double>("reports", reports,
                          {static_cast<int64_t>(epochs.size()), kReportFields});
  const int64_t samples[] = {train.samples, test.samples, test.correct};
  const double losses[] = {train.loss, test.loss, train_seconds};
  user->AddValues<int64_t>("tally.samples", samples);
  user->AddValues<double>("tally.losses", losses);
}

absl::Status RestoreProgress(const KernelState& user,
                             std::vector<EpochReport>* epochs, Tally* train,
                             Tally* test, double* train_seconds) {
  const StateEntry* reports = user.Find("reports");
  if (reports == nullptr || reports->shape.size() != 2 ||
      reports->shape[1] != kReportFields || reports->data_type != DT_FLOAT64) {
    return absl::DataLossError(
        "checkpoint: the training's reports are missing or malformed");
  }
  std::vector<double> values(reports->elem_cnt());
  absl::Status read = user.Read<double>("reports", absl::MakeSpan(values));
  if (!read.ok()) return read;
  for (int64_t i = 0; i < reports->shape[0]; ++i) {
    const double* f = values.data() + i * kReportFields;
    EpochReport e;
    e.epoch = static_cast<int>(f[0]);
    e.train_loss = f[1];
    e.test_loss = f[2];
    e.test_accuracy = f[3];
    e.train_samples = static_cast<int64_t>(f[4]);
    e.test_samples = static_cast<int64_t>(f[5]);
    e.train_seconds = f[6];
    e.eval_seconds = f[7];
    e.samples_per_s =
        e.train_seconds > 0 ? e.train_samples / e.train_seconds : 0;
    epochs->push_back(e);
  }
  int64_t samples[3];
  double losses[3];
  read = user.Read<int64_t>("tally.samples", absl::MakeSpan(samples));
  if (read.ok())
    read = user.Read<double>("tally.losses", absl::MakeSpan(losses));
  if (!read.ok()) return read;
  train->samples = samples[0];
  test->samples = samples[1];
  test->correct = samples[2];
  train->loss = losses[0];
  test->loss = losses[1];
  *train_seconds = losses[2];
  return absl::OkStatus();
}

// The first piece after `pos` (in epoch `epoch`, which ends at `end`) where
// a checkpoint is due: after every `every` training steps; else `end`.
int64_t NextCut(const nn::MlpSchedule& schedule, int64_t every, int epoch,
                int64_t pos, int64_t end) {
  if (every <= 0) return end;
  const int64_t first = epoch * schedule.period();
  const int64_t t = schedule.train_pieces;
  const int64_t index = pos - first;
  if (index >= t) return end;
  const int64_t steps = epoch * t + index;  // done before `pos`
  const int64_t due = (steps / every + 1) * every;
  const int64_t last = due - epoch * t - 1;  // the piece that makes it due
  return last < t ? first + last + 1 : end;
}

// The plan reads the IDX files itself (MlpConfig::data): each epoch is one
// run (Start), cut into shorter runs where checkpoints are due; its pieces
// come back in order, the training pieces then the evaluation pieces,
// timed as they arrive.
absl::StatusOr<TrainSummary> TrainReadingInPlan(const MnistOptions& o,
                                                const EpochCallback& on_epoch) {
  nn::MlpConfig model = o.model;
  nn::MlpData data;
  data.train_images = FilePath(o, true, true);
  data.train_labels = FilePath(o, true, false);
  data.test_images = FilePath(o, false, true);
  data.test_labels = FilePath(o, false, false);
  data.train_limit = o.train_limit;
  data.test_limit = o.test_limit;
  data.epochs = o.epochs;
  data.seed = o.data_seed;
  data.shuffle_window = kWholeEpoch;
  data.mean = kPixelMean;
  data.std = kPixelStd;
  model.data = data;
  // The plan may run this many pieces ahead of the caller's collecting, so
  // the caller's wake-ups (it shares the cores with the streams) never pace
  // the streams.
  model.depth = std::max(model.depth, kRunAhead);
  auto trainer = nn::MlpTrainer::Create(model, o.trace);
  if (!trainer.ok()) return trainer.status();
  const nn::MlpSchedule& schedule = (*trainer)->schedule();
  const int64_t period = schedule.period();
  TrainSummary summary;
  const bool checkpoints = !o.checkpoint_dir.empty();
  CheckpointWriteOptions write;
  write.keep_last = o.keep_last;
  CheckpointWriter writer(o.checkpoint_dir, write);

  // Where this process starts, and what the checkpoint carried over.
  int64_t start = 0;
  Tally restored_train, restored_test;
  double restored_seconds = 0;
  if (o.resume) {
    auto found = ResolveCheckpoint(o.checkpoint_dir);
    if (found.ok()) {
      auto info = (*trainer)->Restore(*found);
      if (!info.ok()) return info.status();
      start = info->piece;
      absl::Status progress =
          RestoreProgress(info->user, &summary.epochs, &restored_train,
                          &restored_test, &restored_seconds);
      if (!progress.ok()) {
        return absl::Status(progress.code(),
                            absl::StrCat(*found, ": ", progress.message()));
      }
    } else if (!absl::IsNotFound(found.status())) {
      return found.status();
    }
    const int64_t epoch = start / std::max<int64_t>(period, 1);
    summary.resumed_from_step =
        epoch * schedule.train_pieces +
        std::min(start - epoch * period, schedule.train_pieces);
  }

  Tally train_tally, test_tally;
  EpochReport report;
  Clock::time_point clock = Clock::now();
  // The plan's state at `piece` (once the plan has passed it) with the
  // running totals of the pieces before it, handed to the writer, which
  // writes it while training goes on.
  auto checkpoint = [&](int64_t piece, double train_seconds) -> absl::Status {
    auto cut = (*trainer)->TakeSnapshot(piece);
    if (!cut.ok()) return cut.status();
    SaveProgress(summary.epochs, train_tally, test_tally, train_seconds,
                 &cut->user);
    summary.checkpoint_bytes = cut->byte_size();
    summary.checkpoint_pause_ms = cut->pause_ms;
    ++summary.checkpoints;
    absl::Status submitted = writer.Submit(std::move(*cut));
    if (writer.last()) {
      summary.checkpoint_write_ms = writer.last()->write_ms;
      summary.checkpoint_cpu_ms = writer.last()->cpu_ms;
    }
    return submitted;
  };

  for (int epoch = static_cast<int>(start / std::max<int64_t>(period, 1));
       epoch < o.epochs; ++epoch) {
    const int64_t first = epoch * period;
    const int64_t end = first + period;
    int64_t pos = std::max(start, first);
    report = EpochReport();
    report.epoch = epoch + 1;
    train_tally = Tally();
    test_tally = Tally();
    double carried_seconds = 0;
    if (pos > first) {  // resumed inside this epoch
      train_tally.samples = restored_train.samples;
      train_tally.loss = restored_train.loss;
      test_tally = restored_test;
      test_tally.here = 0;
      carried_seconds = restored_seconds;
    }
    clock = Clock::now();
    // Time from this epoch's start to its last training piece.
    auto train_seconds = [&] {
      if (pos - first >= schedule.train_pieces) return report.train_seconds;
      return carried_seconds + SecondsSince(clock);
    };
    if (pos - first >= schedule.train_pieces) {
      report.train_seconds = carried_seconds;
    }
    // The epoch is one run; the checkpoints due in it are snapshots the
    // plan takes as it passes them, without stopping.
    std::vector<int64_t> cuts;
    if (checkpoints) {
      for (int64_t at = NextCut(schedule, o.checkpoint_every, epoch, pos, end);
           at < end;
           at = NextCut(schedule, o.checkpoint_every, epoch, at, end)) {
        cuts.push_back(at);
      }
    }
    absl::Status started = (*trainer)->Start(end - pos, cuts);
    if (!started.ok()) return started;
    size_t next = 0;
    for (; pos < end; ++pos) {
      if (next < cuts.size() && pos == cuts[next]) {
        absl::Status saved = checkpoint(cuts[next++], train_seconds());
        if (!saved.ok()) return saved;
      }
      auto result = (*trainer)->Collect();
      if (!result.ok()) return result.status();
      (result->train ? train_tally : test_tally).Add(*result, &summary);
      if (pos + 1 - first == schedule.train_pieces) {
        report.train_seconds = carried_seconds + SecondsSince(clock);
        clock = Clock::now();
      }
    }
    report.eval_seconds = SecondsSince(clock);
    Finish(on_epoch, report, train_tally, test_tally, &summary);
  }
  absl::Status finished = (*trainer)->Finish();
  if (!finished.ok()) return finished;
  // The end is a cut too: its checkpoint, and the weights' digest.
  auto last = (*trainer)->Snapshot();
  if (!last.ok()) return last.status();
  summary.weights_crc32 = WeightsCrc32(*last);
  if (checkpoints && start < o.epochs * period) {
    SaveProgress(summary.epochs, Tally(), Tally(), 0, &last->user);
    ++summary.checkpoints;
    absl::Status submitted = writer.Submit(std::move(*last));
    if (submitted.ok()) submitted = writer.Flush();
    if (!submitted.ok()) return submitted;
    summary.checkpoint_write_ms = writer.last()->write_ms;
    summary.checkpoint_cpu_ms = writer.last()->cpu_ms;
  }
  absl::Status flushed = writer.Flush();
  if (!flushed.ok()) return flushed;
  if (o.trace) summary.trace = (*trainer)->trace();
  Totals(&summary);
  return summary;
}

}  // namespace

std::string WeightsCrc32(const CheckpointData& data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  for (const TaskState& task : data.tasks) {
    if (task.op_type != "variable") continue;
    const StateEntry* value = task.state.Find("value");
    if (value == nullptr) continue;
    crc = crc32_z(crc, reinterpret_cast<const Bytef*>(value->bytes.data()),
                  value->bytes.size());
  }
  return absl::StrFormat("%08x", static_cast<uint32_t>(crc));
}

absl::StatusOr<TrainSummary> TrainWithPlan(const MnistOptions& options,
                                           const EpochCallback& on_epoch) {
  auto resolved = Resolve(options);
  if (!resolved.ok()) return resolved.status();
  const MnistOptions& o = *resolved;
  if (!o.checkpoint_dir.empty() && o.pipelines) {
    return absl::InvalidArgumentError(
        "checkpoints: with the plan reading its own data (--data=plan) only");
  }
  if (o.checkpoint_dir.empty() && (o.resume || o.checkpoint_every > 0)) {
    return absl::InvalidArgumentError(
        "--resume and --checkpoint-every need --checkpoint-dir");
  }
  if (!o.pipelines) return TrainReadingInPlan(o, on_epoch);
  auto trainer = nn::MlpTrainer::Create(o.model, o.trace);
  if (!trainer.ok()) return trainer.status();
  auto train = MakePipeline(o, true);
  if (!train.ok()) return train.status();
  auto test = MakePipeline(o, false);
  if (!test.ok()) return test.status();
  TrainSummary summary;
  const int depth = o.model.depth;

  // One pass of `pipe` through the trainer; every result lands in `tally`.
  auto pass = [&](Pipeline* pipe, bool training, Tally* tally) {
    for (int i = 0; i < o.prefetch; ++i) {
      absl::Status run = pipe->Run();
      if (!run.ok()) return run;
    }
    while (true) {
      auto batch = pipe->Outputs();
      if (absl::IsOutOfRange(batch.status())) break;
      if (!batch.ok()) return batch.status();
      absl::Status run = pipe->Run();
      if (!run.ok()) return run;
      if ((*trainer)->pending() >= depth) {
        auto result = (*trainer)->Collect();
        if (!result.ok()) return result.status();
        tally->Add(*result, &summary);
      }
      const OutputView& x = batch->outputs[0];
      const OutputView& y = batch->outputs[1];
      absl::Status fed =
          (*trainer)->Submit(static_cast<const float*>(x.data().raw_data()),
                             static_cast<const int32_t*>(y.data().raw_data()),
                             x.num_samples(), training);
      if (!fed.ok()) return fed;
    }
    while ((*trainer)->pending() > 0) {
      auto result = (*trainer)->Collect();
      if (!result.ok()) return result.status();
      tally->Add(*result, &summary);
    }
    return absl::OkStatus();
  };

  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    if (epoch > 0) {
      absl::Status reset = (*train)->Reset();
      if (reset.ok()) reset = (*test)->Reset();
      if (!reset.ok()) return reset;
    }
    EpochReport report;
    report.epoch = epoch + 1;
    Tally train_tally, test_tally;
    Clock::time_point start = Clock::now();
    absl::Status status = pass(train->get(), true, &train_tally);
    if (!status.ok()) return status;
    report.train_seconds = SecondsSince(start);
    start = Clock::now();
    status = pass(test->get(), false, &test_tally);
    if (!status.ok()) return status;
    report.eval_seconds = SecondsSince(start);
    Finish(on_epoch, report, train_tally, test_tally, &summary);
  }
  absl::Status finished = (*trainer)->Finish();
  if (finished.ok()) finished = (*train)->Finish();
  if (finished.ok()) finished = (*test)->Finish();
  if (!finished.ok()) return finished;
  auto weights = (*trainer)->Snapshot();
  if (!weights.ok()) return weights.status();
  summary.weights_crc32 = WeightsCrc32(*weights);
  if (o.trace) summary.trace = (*trainer)->trace();
  Totals(&summary);
  return summary;
}

absl::StatusOr<TrainSummary> TrainSequential(const MnistOptions& options,
                                             const EpochCallback& on_epoch) {
  auto resolved = Resolve(options);
  if (!resolved.ok()) return resolved.status();
  const MnistOptions& o = *resolved;
  nn::ReferenceTrainer trainer(o.model);
  TrainSummary summary;
  const int64_t batch = o.model.batch_size;
  const int64_t width = o.model.inputs;
  // The normalize kernel's arithmetic: float32 mean and 1 / std.
  const float mean = static_cast<float>(kPixelMean);
  const float inv_std = 1.0f / static_cast<float>(kPixelStd);
  std::vector<float> x(batch * width);
  std::vector<int32_t> y(batch);

  struct Set {
    pipeline::IdxArray images, labels;
    int64_t size = 0;
  };
  // Read inside the first epoch's timing, as the pipelines read theirs.
  auto load = [&](bool train, int64_t limit, Set* set) -> absl::Status {
    auto images = pipeline::ReadIdx(FilePath(o, train, true));
    if (!images.ok()) return images.status();
    auto labels = pipeline::ReadIdx(FilePath(o, train, false));
    if (!labels.ok()) return labels.status();
    set->images = std::move(*images);
    set->labels = std::move(*labels);
    set->size = set->images.dims[0];
    if (limit > 0) set->size = std::min(set->size, limit);
    return absl::OkStatus();
  };
  auto pass = [&](const Set& set, const std::vector<int64_t>& order,
                  bool training, Tally* tally) -> absl::Status {
    for (int64_t first = 0; first < set.size; first += batch) {
      const int64_t rows = std::min(batch, set.size - first);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t index = order[first + r];
        nn::NormalizeBytes(set.images.data.data() + index * width, width, mean,
                           inv_std, x.data() + r * width);
        y[r] = set.labels.data[index];
      }
      auto result = trainer.Run(x.data(), y.data(), rows, training);
      if (!result.ok()) return result.status();
      tally->Add(*result, &summary);
    }
    return absl::OkStatus();
  };

  Set train, test;
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    EpochReport report;
    report.epoch = epoch + 1;
    Tally train_tally, test_tally;
    Clock::time_point start = Clock::now();
    if (epoch == 0) {
      absl::Status loaded = load(true, o.train_limit, &train);
      if (!loaded.ok()) return loaded;
    }
    absl::Status status =
        pass(train,
             pipeline::EpochOrder(train.size, kWholeEpoch, o.data_seed, epoch),
             true, &train_tally);
    if (!status.ok()) return status;
    report.train_seconds = SecondsSince(start);
    start = Clock::now();
    if (epoch == 0) {
      absl::Status loaded = load(false, o.test_limit, &test);
      if (!loaded.ok()) return loaded;
    }
    status = pass(test, pipeline::EpochOrder(test.size, 0, 0, epoch), false,
                  &test_tally);
    if (!status.ok()) return status;
    report.eval_seconds = SecondsSince(start);
    Finish(on_epoch, report, train_tally, test_tally, &summary);
  }
  Totals(&summary);
  return summary;
}

std::vector<std::pair<std::string, double>> StreamBusyShares(
    const RunTrace& trace) {
  std::map<std::string, int64_t> busy;
  int64_t end = trace.origin_ns;
  for (const RunTrace::Task& task : trace.tasks) {
    for (const ActSpan& span : task.spans) {
      busy[task.stream] += span.end_ns - span.begin_ns;
      end = std::max(end, span.end_ns);
    }
  }
  const double wall = static_cast<double>(end - trace.origin_ns);
  std::vector<std::pair<std::string, double>> shares;
  for (const auto& [stream, ns] : busy) {
    shares.emplace_back(stream, wall > 0 ? ns / wall : 0);
  }
  return shares;
}

}  // namespace actorflow::internal::examples
