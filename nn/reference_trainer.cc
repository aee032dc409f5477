#include "nn/reference_trainer.h"

#include <algorithm>
#include <cmath>

#include "nn/dense_math.h"

namespace actorflow::internal::nn {
namespace {

// The window's initial values, as a variable with attrs full_shape and
// offset makes them (the same as the whole matrix's, cut).
std::vector<float> InitialValues(const MlpConfig& c, int i, int k, bool bias) {
  const Window w = WindowOf(c, i, k);
  if (bias) return std::vector<float>(w.bias_size, 0.0f);
  std::vector<float> values(w.rows * w.cols);
  (void)InitWeightsWindow("uniform", WeightScale(c, i), ParamSeed(c, 2 * i),
                          {InUnits(c, i), OutUnits(c, i)}, {w.row0, w.col0},
                          {w.rows, w.cols}, values.data());
  return values;
}

}  // namespace

ReferenceTrainer::ReferenceTrainer(const MlpConfig& config) : config_(config) {
  const MlpConfig& c = config_;
  const int64_t rows = c.batch_size;
  for (int i = 0; i < Layers(c); ++i) {
    Layer layer;
    layer.split = SplitOf(c, i);
    layer.in = InUnits(c, i);
    layer.out = OutUnits(c, i);
    for (int k = 0; k < Streams(layer); ++k) {
      Slice s;
      const Window win = WindowOf(c, i, k);
      for (bool is_bias : {false, true}) {
        Param& p = is_bias ? s.b : s.w;
        p.value = InitialValues(c, i, k, is_bias);
        p.velocity.assign(p.value.size(), 0.0f);
        p.delta.resize(p.value.size());
        p.grad.resize(p.value.size());
      }
      const int64_t cols =
          layer.split == LayerSplit::kColumns ? win.cols : layer.out;
      s.z.resize(rows * cols);
      s.a.resize(rows * cols);
      s.dz.resize(rows * cols);
      s.da_in.resize(rows * layer.in);
      layer.slices.push_back(std::move(s));
    }
    layer.sum.resize(rows * std::max(layer.in, layer.out));
    layers_.push_back(std::move(layer));
  }
  dlogits_.resize(rows * c.classes);
}

// A replicated layer's streams all compute the same: one slice stands for
// them.
int ReferenceTrainer::Streams(const Layer& layer) const {
  return layer.split == LayerSplit::kReplicated ? 1 : config_.streams;
}

const float* ReferenceTrainer::Input(int i, int k, const float* x) const {
  if (i == 0) return x;
  const Layer& prev = layers_[i - 1];
  // A column layer's activations stay per stream; the others are whole.
  return prev.slices[prev.split == LayerSplit::kColumns ? k : 0].a.data();
}

int64_t ReferenceTrainer::InputWidth(int i, int k) const {
  if (i == 0) return config_.inputs;
  const Layer& prev = layers_[i - 1];
  if (prev.split != LayerSplit::kColumns) return prev.out;
  return SliceBegin(prev.out, config_.streams, k + 1) -
         SliceBegin(prev.out, config_.streams, k);
}

absl::StatusOr<PieceResult> ReferenceTrainer::Run(const float* x,
                                                  const int32_t* labels,
                                                  int64_t rows, bool train) {
  const MlpConfig& c = config_;
  const int n = c.streams;
  const int last = Layers(c) - 1;
  PieceResult result{train, rows, 0, 0};
  // Forward, stream by stream within each layer, as the plan's tasks do.
  for (int i = 0; i <= last; ++i) {
    Layer& layer = layers_[i];
    if (layer.split == LayerSplit::kRows) {
      // Partial products (stored in each slice's z), then their sum in
      // stream order (add), then the bias on the sum.
      for (int k = 0; k < n; ++k) {
        Slice& s = layer.slices[k];
        MatMul(Input(i, k, x), rows, InputWidth(i, k), false, s.w.value.data(),
               InputWidth(i, k), layer.out, false, s.z.data());
      }
      float* sum = layer.slices[0].a.data();
      const int64_t count = rows * layer.out;
      if (n == 1) {
        std::copy(layer.slices[0].z.begin(), layer.slices[0].z.begin() + count,
                  sum);
      } else {
        std::vector<const float*> terms;
        for (int k = 0; k < n; ++k) terms.push_back(layer.slices[k].z.data());
        AddInOrder(terms, count, sum);
      }
      BiasAdd(sum, layer.slices[0].b.value.data(), rows, layer.out, sum);
      if (i < last) Relu(sum, count, sum);
      continue;
    }
    for (int k = 0; k < Streams(layer); ++k) {
      Slice& s = layer.slices[k];
      const int64_t cols = static_cast<int64_t>(s.b.value.size());
      MatMul(Input(i, k, x), rows, InputWidth(i, k), false, s.w.value.data(),
             InputWidth(i, k), cols, false, s.a.data());
      BiasAdd(s.a.data(), s.b.value.data(), rows, cols, s.a.data());
      if (i < last) Relu(s.a.data(), rows * cols, s.a.data());
    }
  }
  const float* logits = layers_[last].slices[0].a.data();
  double loss = 0;
  absl::Status status = SoftmaxCrossEntropy(logits, labels, rows, c.classes,
                                            &loss, dlogits_.data());
  if (!status.ok()) return status;
  result.loss_sum = loss;
  if (!train) {
    result.correct = CountCorrect(logits, labels, rows, c.classes);
    Update(0);
    return result;
  }
  // Backward. dz of layer i lives in each slice's dz (whole layers: slice
  // 0's), starting from dlogits.
  std::copy(dlogits_.begin(), dlogits_.begin() + rows * c.classes,
            layers_[last].slices[0].dz.begin());
  for (int i = last; i >= 0; --i) {
    Layer& layer = layers_[i];
    const bool whole_dz = layer.split != LayerSplit::kColumns;
    for (int k = 0; k < Streams(layer); ++k) {
      Slice& s = layer.slices[k];
      const float* dz = layer.slices[whole_dz ? 0 : k].dz.data();
      const int64_t cols =
          whole_dz ? layer.out : static_cast<int64_t>(s.b.value.size());
      BiasAddGrad(dz, rows, cols, s.b.grad.data());
      MatMul(Input(i, k, x), rows, InputWidth(i, k), true, dz, rows, cols,
             false, s.w.grad.data());
      if (i > 0) {
        MatMul(dz, rows, cols, false, s.w.value.data(), InputWidth(i, k), cols,
               true, s.da_in.data());
      }
    }
    if (i == 0) break;
    // dz of layer i - 1 = relu_grad(da, its activations), per stream where
    // layer i - 1 is split by columns, else whole.
    Layer& prev = layers_[i - 1];
    if (layer.split == LayerSplit::kColumns) {
      // Partial input gradients summed in stream order.
      std::vector<const float*> terms;
      for (int k = 0; k < n; ++k) terms.push_back(layer.slices[k].da_in.data());
      float* da = layer.sum.data();
      if (n == 1) {
        std::copy(terms[0], terms[0] + rows * layer.in, da);
      } else {
        AddInOrder(terms, rows * layer.in, da);
      }
      Slice& p = prev.slices[0];
      ReluGrad(da, p.a.data(), rows * layer.in, p.dz.data());
    } else if (layer.split == LayerSplit::kRows) {
      for (int k = 0; k < n; ++k) {
        Slice& p = prev.slices[k];
        ReluGrad(layer.slices[k].da_in.data(), p.a.data(),
                 rows * InputWidth(i, k), p.dz.data());
      }
    } else {
      Slice& p = prev.slices[0];
      ReluGrad(layer.slices[0].da_in.data(), p.a.data(), rows * layer.in,
               p.dz.data());
    }
  }
  Update(rows);
  return result;
}

// As the plan: every piece steps every parameter, one without training
// samples by zero (keeping the velocity and the step count).
void ReferenceTrainer::Update(int64_t samples) {
  const MlpConfig& c = config_;
  const double lr = ScheduledRate(c.lr, c.decay, c.decay_steps, steps_);
  steps_ += samples > 0;
  for (Layer& layer : layers_) {
    for (Slice& s : layer.slices) {
      for (Param* p : {&s.w, &s.b}) {
        const int64_t count = static_cast<int64_t>(p->value.size());
        SgdMomentum({p->grad.data()}, samples, lr, c.momentum, count,
                    p->velocity.data(), p->delta.data());
        ApplyDelta(p->value.data(), p->delta.data(), count, p->value.data());
      }
    }
  }
}

}  // namespace actorflow::internal::nn
