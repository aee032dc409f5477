#ifndef ACTORFLOW_NN_MLP_H_
#define ACTORFLOW_NN_MLP_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "proto/plan.pb.h"
#include "runtime/run_trace.h"
#include "runtime/session.h"

// A two-layer perceptron (inputs -> hidden ReLU -> classes, softmax
// cross-entropy, SGD with momentum) as a plan, and the sequential loop that
// computes the same thing without actors. README.md, "Training", describes
// the plan; examples/mnist_mlp runs it on Fashion-MNIST.
namespace actorflow::nn {

struct MlpConfig {
  int64_t inputs = 784;
  int64_t hidden = 256;
  int64_t classes = 10;
  // Rows per piece; a piece may hold fewer (the last of an epoch).
  int64_t batch_size = 64;
  // Data-parallel towers: each takes a slice of every batch's rows on its
  // own CPU stream; the optimizers sum the towers' gradients in tower order.
  int towers = 2;
  double lr = 0.01;
  double momentum = 0.9;
  // Step decay: lr times `decay` after every `decay_steps` training steps
  // (0: constant).
  double decay = 1;
  int64_t decay_steps = 0;
  // Initial weights (uniform, He-scaled; biases zero).
  uint64_t seed = 1;
  // Pieces the caller may have submitted and not collected.
  int depth = 2;
  // How long idle stream threads spin before they sleep (the session's
  // ChannelOptions::spin_ns).
  int64_t spin_ns = 20000;
  // Towers on GPU streams 0..towers-1 of device 0 (feeds copied up by
  // `<feed>.h2d`, results down by `<fetch>.d2h`). The GPU kernels sum in
  // their own order: results agree with the CPU's within float rounding.
  bool gpu = false;
};

absl::Status CheckConfig(const MlpConfig& config);

// The plan. Per tower k (CPU stream k): feeds train.x.k, train.y.k,
// eval.x.k, eval.y.k; the training branch t<k>.* (forward, loss, backward)
// and the evaluation branch e<k>.* (forward, loss, accuracy). Per parameter
// p in w1, b1, w2, b2 and tower k: a replica `p.k` (variable, an initial
// register; `p` with one tower) read by tower k, and an optimizer shard
// `p.sgd.k` (sgd_momentum over slice k of the elements; `p.sgd` with one
// tower) whose delta every replica adds. Fetches train.loss.k, eval.loss.k
// and eval.correct.k on stream `towers`.
absl::StatusOr<Plan> BuildMlpPlan(const MlpConfig& config);

// The rows of a batch of `rows` that tower k takes: [begin(k), begin(k+1)).
int64_t TowerBegin(int64_t rows, int towers, int k);

// What one piece gave: a training piece's loss (its weights then moved on),
// or an evaluation piece's loss and correct predictions.
struct PieceResult {
  bool train = false;
  int64_t rows = 0;
  double loss_sum = 0;  // the towers' sums, added in tower order
  int64_t correct = 0;  // evaluation pieces only
  bool operator==(const PieceResult& other) const {
    return train == other.train && rows == other.rows &&
           loss_sum == other.loss_sum && correct == other.correct;
  }
};

// Runs the plan in a Session: Submit pieces (x [rows, inputs] float32,
// labels [rows] int32), Collect their results in order.
class MlpTrainer {
 public:
  static absl::StatusOr<std::unique_ptr<MlpTrainer>> Create(
      const MlpConfig& config, bool trace = false);

  // Feeds one piece; with `depth` pieces uncollected, collects the oldest
  // first (into the queue Collect reads).
  absl::Status Submit(const float* x, const int32_t* labels, int64_t rows,
                      bool train);
  // The oldest submitted piece's result (waits for it).
  absl::StatusOr<PieceResult> Collect();
  int64_t pending() const {
    return static_cast<int64_t>(submitted_.size() + ready_.size());
  }
  // Ends the run (every submitted piece must have been collected) and
  // joins the plan's work; trace() then holds every act.
  absl::Status Finish();
  const RunTrace& trace() const { return session_->trace(); }
  const Plan& plan() const { return plan_; }

 private:
  MlpTrainer() = default;
  absl::StatusOr<PieceResult> FetchOne();

  MlpConfig config_;
  Plan plan_;
  std::unique_ptr<Session> session_;
  std::deque<PieceResult> submitted_;  // fed, not fetched
  std::deque<PieceResult> ready_;      // fetched, not collected
  bool finished_ = false;
};

// The same pieces through the same arithmetic (dense_math.h), one call
// after another on the caller's thread: what a plan must reproduce bit for
// bit.
class ReferenceTrainer {
 public:
  explicit ReferenceTrainer(const MlpConfig& config);
  absl::StatusOr<PieceResult> Run(const float* x, const int32_t* labels,
                                  int64_t rows, bool train);
  // Parameter i (w1, b1, w2, b2).
  const std::vector<float>& weights(int i) const { return params_[i].value; }

 private:
  struct Param {
    std::vector<float> value, velocity, delta;
    std::vector<std::vector<float>> grads;  // per tower
  };
  MlpConfig config_;
  int64_t steps_ = 0;  // training pieces so far
  Param params_[4];
  std::vector<float> z1_, h1_, z2_, logits_, dlogits_, dh1_, dz1_;
};

}  // namespace actorflow::nn

#endif  // ACTORFLOW_NN_MLP_H_
