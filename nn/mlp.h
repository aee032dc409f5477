#ifndef ACTORFLOW_NN_MLP_H_
#define ACTORFLOW_NN_MLP_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "actorflow/run_trace.h"
#include "actorflow/session.h"
#include "proto/plan.pb.h"

// A perceptron (inputs -> hidden ReLU layers -> classes, softmax
// cross-entropy, SGD with momentum) as a plan, and the sequential loop that
// computes the same thing without actors. docs/training.md describes
// the plan; examples/mnist_mlp runs it on Fashion-MNIST.
//
// The layers are split over `streams` CPU (or GPU) streams by their units,
// not by the batch's rows: every stream sees the whole batch and holds a
// slice of every large weight matrix, alternately its output units
// ("column" layers) and its input units ("row" layers, whose per-stream
// partial products are summed in stream order on every stream). So no
// gradient and no weight ever crosses between streams: the only traffic is
// the row layers' partial products, a few kilobytes per piece.
namespace actorflow::nn {

// A dataset the plan reads itself (op_type `idx_batches`, one task per
// stream): pieces then come from inside the plan, with no thread of the
// caller's in the loop. Each epoch is its training batches (shuffled by
// `seed` and the epoch through a window of `shuffle_window` samples) then
// its test batches (in order).
struct MlpData {
  std::string train_images, train_labels;  // IDX files, gzip or not
  std::string test_images, test_labels;
  int64_t train_limit = 0;  // the first N samples only (0: all)
  int64_t test_limit = 0;
  int epochs = 1;
  uint64_t seed = 1;
  int64_t shuffle_window = int64_t{1} << 40;  // any size >= n: whole epoch
  // x = (pixel - mean) * (1 / std), in float32.
  double mean = 0;
  double std = 1;
};

struct MlpConfig {
  int64_t inputs = 784;
  std::vector<int64_t> hidden = {256};  // units of each hidden layer
  int64_t classes = 10;
  // Rows per piece; a piece may hold fewer (the last of an epoch).
  int64_t batch_size = 64;
  // Streams the layers' units are split over (each hidden layer needs at
  // least this many units).
  int streams = 2;
  double lr = 0.01;
  double momentum = 0.9;
  // Step decay: lr times `decay` after every `decay_steps` training steps
  // (0: constant).
  double decay = 1;
  int64_t decay_steps = 0;
  // Initial weights (uniform, He-scaled; biases zero).
  uint64_t seed = 1;
  // Pieces the plan may finish before the caller collects them (and, when
  // fed, pieces the caller may have submitted and not collected).
  int depth = 2;
  // How long idle stream threads spin before they sleep (the session's
  // ChannelOptions::spin_ns).
  int64_t spin_ns = 20000;
  // Towers on streams of GPU 0 (inputs copied up once by
  // `<producer>@gpu0`, results down by `<producer>@cpu`). The GPU kernels
  // sum in their own order: results agree with the CPU's within float
  // rounding.
  bool gpu = false;
  // Set: the plan reads its pieces (MlpTrainer::Start); unset: the caller
  // feeds them (MlpTrainer::Submit).
  std::optional<MlpData> data;
};

absl::Status CheckConfig(const MlpConfig& config);

// The plan, written as a job and compiled by CompileJob: every operator is
// placed over the towers (`streams` replicas of device 0) with the split
// stated as signatures, so the compiler makes task `<op>/<k>` per tower k
// (one tower: `<op>`), adds the row layers' partial sums and copies to and
// from the GPU. Per layer i (0-based; layer L = hidden.size() is the output
// layer): parameters `w<i>`, `b<i>` (variables whose registers are
// initial) with their optimizers `w<i>.sgd`, `b<i>.sgd`; the training
// branch `t.*` and the evaluation branch `e.*` (past the last row layer on
// tower 0 only). Inputs: feeds `train.x`, `train.y`, `eval.x`, `eval.y` on
// CPU device 1; or, with `data`, the sources `data.train` and `data.eval`.
// Fetches `train.loss`, `eval.loss`, `eval.correct`.
absl::StatusOr<Plan> BuildMlpPlan(const MlpConfig& config);

// How a layer's work is split over the streams.
enum class LayerSplit {
  kColumns,     // stream k: output units [begin(k), begin(k+1))
  kRows,        // stream k: input units [begin(k), begin(k+1)); partials summed
  kReplicated,  // every stream the whole layer (the output layer after a
                // row layer: a few thousand weights)
};
// Layer i's split: hidden layers alternate columns, rows, columns...; the
// output layer takes rows after a column layer, else is replicated.
LayerSplit SplitOf(const MlpConfig& config, int layer);
// The first of `units` that stream k of `streams` takes (the compiler's
// split: the first units % streams streams one unit more); `units` for
// k == streams.
int64_t SliceBegin(int64_t units, int streams, int k);

// What one piece gave: a training piece's loss (its weights then moved on),
// or an evaluation piece's loss and correct predictions.
struct PieceResult {
  bool train = false;
  int64_t rows = 0;
  double loss_sum = 0;
  int64_t correct = 0;  // evaluation pieces only
  bool operator==(const PieceResult& other) const {
    return train == other.train && rows == other.rows &&
           loss_sum == other.loss_sum && correct == other.correct;
  }
};

// The pieces of an MlpData schedule: per epoch, `train` training pieces
// then `test` evaluation pieces, of the given sizes.
struct MlpSchedule {
  int64_t train_samples = 0, test_samples = 0;
  int64_t train_pieces = 0, test_pieces = 0;
  int64_t period() const { return train_pieces + test_pieces; }
  // Piece p's kind and rows.
  PieceResult Piece(int64_t p, int64_t batch_size) const;
};
absl::StatusOr<MlpSchedule> ScheduleOf(const MlpData& data, int64_t batch_size);

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

// The same pieces through the same arithmetic (dense_math.h), one call
// after another on the caller's thread, stream by stream: what a plan must
// reproduce bit for bit.
class ReferenceTrainer {
 public:
  explicit ReferenceTrainer(const MlpConfig& config);
  absl::StatusOr<PieceResult> Run(const float* x, const int32_t* labels,
                                  int64_t rows, bool train);

 private:
  // One stream's (or, replicated, every stream's) share of a parameter.
  struct Param {
    std::vector<float> value, velocity, delta, grad;
  };
  // Per layer and stream: weights, bias and the activations kept for the
  // backward pass (a replicated layer uses stream 0's only).
  struct Slice {
    Param w, b;
    std::vector<float> z, a, dz, da_in;
  };
  struct Layer {
    LayerSplit split;
    int64_t in = 0, out = 0;
    std::vector<Slice> slices;
    std::vector<float> sum;  // a row layer's summed partials
  };
  // Stream k's input to layer i (x, a slice, or a whole activation).
  const float* Input(int i, int k, const float* x) const;
  int64_t InputWidth(int i, int k) const;
  int Streams(const Layer& layer) const;
  void Update(int64_t samples);

  MlpConfig config_;
  int64_t steps_ = 0;  // training pieces so far
  std::vector<Layer> layers_;
  std::vector<float> dlogits_;
};

}  // namespace actorflow::nn

#endif  // ACTORFLOW_NN_MLP_H_
