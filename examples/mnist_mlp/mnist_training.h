#ifndef ACTORFLOW_EXAMPLES_MNIST_MLP_MNIST_TRAINING_H_
#define ACTORFLOW_EXAMPLES_MNIST_MLP_MNIST_TRAINING_H_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "actorflow/checkpoint.h"
#include "actorflow/run_trace.h"
#include "nn/mlp.h"

// Training the MLP on Fashion-MNIST, two ways over the same pieces: as a
// plan fed by two data pipelines (IDX reader, shuffle, batch, normalize),
// and as the sequential reference loop. The example, its test and the
// benchmark all call these.
namespace actorflow::internal::examples {

// Fashion-MNIST's pixel mean and standard deviation (0..255 scale).
constexpr double kPixelMean = 72.94;
constexpr double kPixelStd = 90.02;

struct MnistOptions {
  std::string data_dir;  // empty: pipeline::FashionMnistDir()
  int epochs = 2;
  nn::MlpConfig model;
  // The first samples of each set (0: all); training takes them in a new
  // shuffled order each epoch (seeded by data_seed), evaluation in order.
  int64_t train_limit = 0;
  int64_t test_limit = 0;
  uint64_t data_seed = 1;
  // The data pipelines' worker threads and prefetch depth.
  // Sets model.decay_steps to the steps of one epoch: the rate decays by
  // model.decay after each epoch.
  bool decay_per_epoch = false;
  int data_threads = 1;
  int prefetch = 2;
  bool trace = false;  // TrainWithPlan: record every act
  // TrainWithPlan: feed the plan from two data pipelines on their own
  // threads (MlpTrainer::Submit) rather than have it read the IDX files
  // itself (MlpConfig::data, the default: no thread of the caller's per
  // piece, so the streams keep the cores). The same batches either way.
  bool pipelines = false;
  // Checkpoints (the plan reading its data only): under checkpoint_dir,
  // after every checkpoint_every training steps (0: none) and at the end,
  // written while training goes on; keep_last of them (0: all). `resume`
  // starts from the newest one there (none: from the beginning). A resumed
  // run ends with the results, bit for bit, of one never stopped.
  std::string checkpoint_dir;
  int64_t checkpoint_every = 0;
  bool resume = false;
  int keep_last = 0;
};

struct EpochReport {
  int epoch = 0;  // from 1
  double train_loss = 0;
  double test_loss = 0;
  double test_accuracy = 0;
  int64_t train_samples = 0;
  int64_t test_samples = 0;
  double train_seconds = 0;
  double eval_seconds = 0;
  double samples_per_s = 0;  // training samples per second of training
};

struct TrainSummary {
  // Every epoch's report, those before a resume's checkpoint included.
  std::vector<EpochReport> epochs;
  // Every piece, in order (training and evaluation).
  std::vector<nn::PieceResult> pieces;
  double samples_per_s = 0;  // over every epoch's training time
  RunTrace trace;            // TrainWithPlan with MnistOptions::trace
  // TrainWithPlan: CRC-32 of every weight at the end (the `variable`
  // tasks' values in plan order), 8 hex digits.
  std::string weights_crc32;
  // With MnistOptions::resume: the training step it resumed at (0: there
  // was no checkpoint); -1 without.
  int64_t resumed_from_step = -1;
  // Checkpoints written by this process, and the last one's cost.
  int64_t checkpoints = 0;
  int64_t checkpoint_bytes = 0;
  // The longest a stream spent saving its tasks' state (training held up).
  double checkpoint_pause_ms = 0;
  double checkpoint_write_ms = 0;  // writing and syncing, beside training
  double checkpoint_cpu_ms = 0;    // the writing thread's CPU time
};

// CRC-32 of the weights in a snapshot of the training plan.
std::string WeightsCrc32(const CheckpointData& data);

using EpochCallback = std::function<void(const EpochReport&)>;

// The plan: MlpTrainer reading the data itself, or fed by the pipelines.
absl::StatusOr<TrainSummary> TrainWithPlan(const MnistOptions& options,
                                           const EpochCallback& on_epoch = {});
// The sequential loop: the same batches, normalized the same way, through
// ReferenceTrainer on the calling thread.
absl::StatusOr<TrainSummary> TrainSequential(
    const MnistOptions& options, const EpochCallback& on_epoch = {});

// Per stream ("m0/cpu0/s1"), the share of the run's wall time its acts
// took, from a trace.
std::vector<std::pair<std::string, double>> StreamBusyShares(
    const RunTrace& trace);

}  // namespace actorflow::internal::examples

#endif  // ACTORFLOW_EXAMPLES_MNIST_MLP_MNIST_TRAINING_H_
