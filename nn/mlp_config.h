#ifndef ACTORFLOW_NN_MLP_CONFIG_H_
#define ACTORFLOW_NN_MLP_CONFIG_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

// The MLP's configuration, how its layers are split over the streams, and
// the schedule of pieces over a dataset: what the plan builder
// (mlp_plan.h), the trainer (mlp_trainer.h) and the reference loop
// (reference_trainer.h) share.
namespace actorflow::internal::nn {

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

// Layer geometry: layer i of Layers(c) (the last is the output layer)
// maps InUnits(c, i) to OutUnits(c, i).
int Layers(const MlpConfig& c);
int64_t InUnits(const MlpConfig& c, int i);
int64_t OutUnits(const MlpConfig& c, int i);
bool IsHidden(const MlpConfig& c, int i);
// Parameter 2i is layer i's weights, 2i + 1 its bias; each has its own
// seed (for one hidden layer: w1 b1 w2 b2).
uint64_t ParamSeed(const MlpConfig& c, int param);
// He-uniform: weights uniform in [-scale, scale), scale sqrt(6 / fan_in).
double WeightScale(const MlpConfig& c, int i);
// Stream k's window of layer i's weights [in, out] and bias [out].
struct Window {
  int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
  int64_t bias0 = 0, bias_size = 0;
};
Window WindowOf(const MlpConfig& c, int i, int k);

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

}  // namespace actorflow::internal::nn

#endif  // ACTORFLOW_NN_MLP_CONFIG_H_
