#include "examples/mnist_mlp/mnist_training.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "nn/dense_math.h"
#include "pipeline/dataset.h"
#include "pipeline/pipeline.h"
#include "runtime/plan_builder.h"

namespace actorflow::examples {
namespace {

using pipeline::OperatorDef;
using pipeline::Pipeline;
using pipeline::PipelineOptions;
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
  void Add(const nn::PieceResult& r, TrainSummary* summary) {
    samples += r.rows;
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
      report.train_seconds > 0 ? train.samples / report.train_seconds : 0;
  summary->epochs.push_back(report);
  if (on_epoch) on_epoch(report);
}

void Totals(TrainSummary* summary) {
  int64_t samples = 0;
  double seconds = 0;
  for (const EpochReport& e : summary->epochs) {
    samples += e.train_samples;
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

// The plan reads the IDX files itself (MlpConfig::data): each epoch is one
// run (Start); its pieces come back in order, the training pieces then the
// evaluation pieces, timed as they arrive.
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
  TrainSummary summary;
  // One run per epoch: the plan then never runs into the next epoch before
  // this one's clock stops, so the times are the epoch's own.
  for (int epoch = 0; epoch < o.epochs; ++epoch) {
    Clock::time_point start = Clock::now();
    absl::Status started = (*trainer)->Start(schedule.period());
    if (!started.ok()) return started;
    EpochReport report;
    report.epoch = epoch + 1;
    Tally train_tally, test_tally;
    for (int64_t i = 0; i < schedule.period(); ++i) {
      auto result = (*trainer)->Collect();
      if (!result.ok()) return result.status();
      (result->train ? train_tally : test_tally).Add(*result, &summary);
      if (i + 1 == schedule.train_pieces) {
        report.train_seconds = SecondsSince(start);
        start = Clock::now();
      }
    }
    report.eval_seconds = SecondsSince(start);
    Finish(on_epoch, report, train_tally, test_tally, &summary);
  }
  absl::Status finished = (*trainer)->Finish();
  if (!finished.ok()) return finished;
  if (o.trace) summary.trace = (*trainer)->trace();
  Totals(&summary);
  return summary;
}

}  // namespace

absl::StatusOr<TrainSummary> TrainWithPlan(const MnistOptions& options,
                                           const EpochCallback& on_epoch) {
  auto resolved = Resolve(options);
  if (!resolved.ok()) return resolved.status();
  const MnistOptions& o = *resolved;
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
      const pipeline::OutputView& x = batch->outputs[0];
      const pipeline::OutputView& y = batch->outputs[1];
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

}  // namespace actorflow::examples
