#include "nn/mlp.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "nn/dense_math.h"
#include "runtime/plan_builder.h"
#include "runtime/plan_writer.h"
#include "runtime/tensor.h"

namespace actorflow::nn {
namespace {

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  std::string init;
  double scale = 0;
};

// w1, b1, w2, b2: He-uniform weights, zero biases.
std::vector<ParamSpec> Params(const MlpConfig& c) {
  return {{"w1", {c.inputs, c.hidden}, "uniform", std::sqrt(6.0 / c.inputs)},
          {"b1", {c.hidden}, "zeros", 0},
          {"w2", {c.hidden, c.classes}, "uniform", std::sqrt(6.0 / c.hidden)},
          {"b2", {c.classes}, "zeros", 0}};
}
enum { kW1, kB1, kW2, kB2, kNumParams };

uint64_t ParamSeed(uint64_t seed, int param) {
  return seed * kNumParams + static_cast<uint64_t>(param);
}

int64_t Elements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

// The widest slice a tower takes.
int64_t TowerRows(const MlpConfig& c) {
  return (c.batch_size + c.towers - 1) / c.towers;
}

}  // namespace

absl::Status CheckConfig(const MlpConfig& c) {
  std::vector<std::string> problems;
  if (c.inputs < 1 || c.hidden < 1 || c.classes < 2) {
    problems.push_back("inputs and hidden at least 1, classes at least 2");
  }
  if (c.batch_size < 1) problems.push_back("batch_size: at least 1");
  if (c.towers < 1 || c.towers > c.batch_size) {
    problems.push_back("towers: from 1 to batch_size");
  }
  if (!(c.lr > 0)) problems.push_back("lr: above 0");
  if (!(c.decay > 0 && c.decay <= 1) || c.decay_steps < 0) {
    problems.push_back("decay: in (0, 1], decay_steps: 0 or more");
  }
  if (!(c.momentum >= 0 && c.momentum < 1)) {
    problems.push_back("momentum: in [0, 1)");
  }
  if (c.depth < 1) problems.push_back("depth: at least 1");
  if (problems.empty()) return absl::OkStatus();
  std::string text = "MLP config:";
  for (const std::string& p : problems) absl::StrAppend(&text, " ", p, ";");
  text.pop_back();
  return absl::InvalidArgumentError(text);
}

int64_t TowerBegin(int64_t rows, int towers, int k) {
  return rows * k / towers;
}

absl::StatusOr<Plan> BuildMlpPlan(const MlpConfig& c) {
  absl::Status ok = CheckConfig(c);
  if (!ok.ok()) return ok;
  const int towers = c.towers;
  const StreamId io = CpuStream(towers);
  // Tower k's stream: CPU stream k, or GPU stream k of device 0.
  auto compute = [&](int k) { return c.gpu ? GpuStream(k) : CpuStream(k); };
  const int64_t rows = TowerRows(c);
  const int results = c.depth + 1;  // never blocks on the caller
  PlanWriter w;
  const std::vector<ParamSpec> params = Params(c);

  // The weights: per parameter, one replica variable per tower on the
  // tower's stream (every replica applies the same deltas, so they stay
  // equal and no weights cross between streams).
  auto replica_name = [&](int i, int k) {
    return towers == 1 ? params[i].name : absl::StrCat(params[i].name, ".", k);
  };
  std::vector<std::vector<TaskProto*>> variables(kNumParams);
  std::vector<std::vector<int64_t>> weights(kNumParams);
  for (int i = 0; i < kNumParams; ++i) {
    const ParamSpec& p = params[i];
    for (int k = 0; k < towers; ++k) {
      TaskProto* var = w.AddTask(replica_name(i, k), "variable", compute(k));
      auto& attrs = *var->mutable_kernel()->mutable_attr();
      attrs["init"] = StringAttr(p.init);
      attrs["scale"] = FloatAttr(p.scale);
      attrs["seed"] = IntAttr(static_cast<int64_t>(ParamSeed(c.seed, i)));
      const int64_t id = w.AddOutput(var, "out", 1, c.gpu,
                                     {BlobProto(p.name, DT_FLOAT32, p.shape)});
      w.Desc(id).set_initial_register(true);
      variables[i].push_back(var);
      weights[i].push_back(id);
    }
  }

  auto task = [&](const std::string& name, const std::string& op, int k) {
    return w.AddTask(name, op, compute(k));
  };
  auto feed = [&](const std::string& name, BlobDescProto blob) {
    return w.AddOutput(w.AddTask(name, "feed", io), "out", results, false,
                       {std::move(blob)});
  };
  // On GPU towers, feeds are copied up and results down on tower k's
  // stream.
  auto to_device = [&](const std::string& name, int64_t id, int k) {
    if (!c.gpu) return id;
    TaskProto* copy = w.AddTask(name + ".h2d", "h2d", compute(k));
    w.Consume(copy, "in", id);
    return w.AddOutput(copy, "out", 2, true);
  };
  auto fetch = [&](const std::string& name, int64_t id, int k) {
    if (c.gpu) {
      TaskProto* copy = w.AddTask(name + ".d2h", "d2h", compute(k));
      w.Consume(copy, "in", id);
      id = w.AddOutput(copy, "out", results, false);
    }
    w.Consume(w.AddTask(name, "fetch", io), "in", id);
  };
  auto out = [&](TaskProto* t, const std::string& key = "out") {
    return w.AddOutput(t, key, 1, c.gpu);
  };
  auto matmul = [&](const std::string& name, int k, int64_t a, int64_t b,
                    bool ta, bool tb) {
    TaskProto* t = task(name, "matmul", k);
    w.Consume(t, "a", a);
    w.Consume(t, "b", b);
    if (ta)
      (*t->mutable_kernel()->mutable_attr())["transpose_a"] = BoolAttr(true);
    if (tb)
      (*t->mutable_kernel()->mutable_attr())["transpose_b"] = BoolAttr(true);
    return out(t);
  };
  auto bias_add = [&](const std::string& name, int k, int64_t x, int64_t b) {
    TaskProto* t = task(name, "bias_add", k);
    w.Consume(t, "x", x);
    w.Consume(t, "bias", b);
    return out(t);
  };
  struct Forward {
    int64_t h1, logits, loss, dlogits;
  };
  // fc1 -> bias -> relu -> fc2 -> bias -> softmax_xent.
  auto forward = [&](const std::string& prefix, int k, int64_t x,
                     int64_t labels) {
    Forward f;
    int64_t z1 = matmul(prefix + ".fc1", k, x, weights[kW1][k], false, false);
    z1 = bias_add(prefix + ".fc1.bias", k, z1, weights[kB1][k]);
    TaskProto* relu = task(prefix + ".relu1", "relu", k);
    w.Consume(relu, "in", z1);
    f.h1 = out(relu);
    int64_t z2 =
        matmul(prefix + ".fc2", k, f.h1, weights[kW2][k], false, false);
    f.logits = bias_add(prefix + ".fc2.bias", k, z2, weights[kB2][k]);
    TaskProto* loss = task(prefix + ".loss", "softmax_xent", k);
    w.Consume(loss, "logits", f.logits);
    w.Consume(loss, "labels", labels);
    f.loss = w.AddOutput(loss, "loss", results, c.gpu);
    f.dlogits = out(loss, "dlogits");
    return f;
  };

  std::vector<std::vector<int64_t>> grads(kNumParams);
  std::vector<int64_t> train_labels;
  for (int k = 0; k < towers; ++k) {
    const std::string n = absl::StrCat(k);
    auto input = [&](const std::string& name, BlobDescProto blob) {
      return to_device(name, feed(name, std::move(blob)), k);
    };
    const int64_t tx = input(
        "train.x." + n, BlobProto("x", DT_FLOAT32, {rows, c.inputs}, true));
    const int64_t ty =
        input("train.y." + n, BlobProto("y", DT_INT32, {rows}, true));
    const int64_t ex = input(
        "eval.x." + n, BlobProto("x", DT_FLOAT32, {rows, c.inputs}, true));
    const int64_t ey =
        input("eval.y." + n, BlobProto("y", DT_INT32, {rows}, true));
    train_labels.push_back(ty);

    // Training: forward, loss, backward.
    const std::string t = "t" + n;
    Forward f = forward(t, k, tx, ty);
    TaskProto* db2 = task(t + ".fc2.bias.grad", "bias_add_grad", k);
    w.Consume(db2, "dy", f.dlogits);
    grads[kB2].push_back(out(db2));
    grads[kW2].push_back(
        matmul(t + ".fc2.grad_w", k, f.h1, f.dlogits, true, false));
    const int64_t dh1 =
        matmul(t + ".fc2.grad_x", k, f.dlogits, weights[kW2][k], false, true);
    TaskProto* relu_grad = task(t + ".relu1.grad", "relu_grad", k);
    w.Consume(relu_grad, "dy", dh1);
    w.Consume(relu_grad, "y", f.h1);
    const int64_t dz1 = out(relu_grad);
    TaskProto* db1 = task(t + ".fc1.bias.grad", "bias_add_grad", k);
    w.Consume(db1, "dy", dz1);
    grads[kB1].push_back(out(db1));
    grads[kW1].push_back(matmul(t + ".fc1.grad_w", k, tx, dz1, true, false));
    fetch("train.loss." + n, f.loss, k);

    // Evaluation: forward, loss, accuracy.
    const std::string e = "e" + n;
    Forward g = forward(e, k, ex, ey);
    TaskProto* acc = task(e + ".acc", "accuracy", k);
    w.Consume(acc, "logits", g.logits);
    w.Consume(acc, "labels", ey);
    const int64_t correct = w.AddOutput(acc, "out", results, c.gpu);
    fetch("eval.loss." + n, g.loss, k);
    fetch("eval.correct." + n, correct, k);
  }

  // The optimizers close each parameter's cycle: shard k (on stream k)
  // updates the k-th slice of the elements from every tower's gradient and
  // sends its delta to every replica. No two streams then wait on one
  // stream's whole update.
  for (int i = 0; i < kNumParams; ++i) {
    int64_t elements = 1;
    for (int64_t d : params[i].shape) elements *= d;
    const int shards = static_cast<int>(std::min<int64_t>(towers, elements));
    for (int k = 0; k < shards; ++k) {
      TaskProto* sgd =
          w.AddTask(shards == 1 ? params[i].name + ".sgd"
                                : absl::StrCat(params[i].name, ".sgd.", k),
                    "sgd_momentum", compute(k));
      auto& attrs = *sgd->mutable_kernel()->mutable_attr();
      attrs["lr"] = FloatAttr(c.lr);
      attrs["momentum"] = FloatAttr(c.momentum);
      attrs["decay"] = FloatAttr(c.decay);
      attrs["decay_steps"] = IntAttr(c.decay_steps);
      if (shards > 1) {
        attrs["shard"] = IntAttr(k);
        attrs["shards"] = IntAttr(shards);
      }
      for (int j = 0; j < towers; ++j) {
        w.Consume(sgd, "grad", grads[i][j]);
        w.Consume(sgd, "batch", train_labels[j]);
      }
      const int64_t delta = w.AddOutput(sgd, "delta", 1, c.gpu);
      for (TaskProto* replica : variables[i]) {
        w.Consume(replica, "delta", delta);
      }
    }
  }
  return std::move(w.plan());
}

// ---- MlpTrainer ----

absl::StatusOr<std::unique_ptr<MlpTrainer>> MlpTrainer::Create(
    const MlpConfig& config, bool trace) {
  auto plan = BuildMlpPlan(config);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<MlpTrainer> trainer(new MlpTrainer());
  trainer->config_ = config;
  trainer->plan_ = *plan;
  SessionOptions options;
  options.trace = trace;
  options.channel.spin_ns = config.spin_ns;
  auto session = Session::Create(std::move(*plan), std::move(options));
  if (!session.ok()) return session.status();
  trainer->session_ = std::move(*session);
  return trainer;
}

absl::Status MlpTrainer::Submit(const float* x, const int32_t* labels,
                                int64_t rows, bool train) {
  if (finished_) return absl::FailedPreconditionError("trainer: finished");
  if (rows < 0 || rows > config_.batch_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: a piece holds 0 to ", config_.batch_size,
                     " rows, got ", rows));
  }
  while (static_cast<int64_t>(submitted_.size()) >= config_.depth) {
    auto result = FetchOne();
    if (!result.ok()) return result.status();
    ready_.push_back(*result);
  }
  const int64_t width = config_.inputs;
  for (int k = 0; k < config_.towers; ++k) {
    const int64_t begin = TowerBegin(rows, config_.towers, k);
    const int64_t n = TowerBegin(rows, config_.towers, k + 1) - begin;
    auto xs = Tensor::FromValues<float>(
        {n, width}, absl::MakeConstSpan(x + begin * width, n * width));
    auto ys = Tensor::FromValues<int32_t>(
        {n}, absl::MakeConstSpan(labels + begin, n));
    auto none_x = Tensor(DT_FLOAT32, {0, width});
    auto none_y = Tensor(DT_INT32, {0});
    const std::string suffix = absl::StrCat(k);
    for (const auto& [name, tensor] :
         std::vector<std::pair<std::string, const Tensor*>>{
             {"train.x.", train ? &*xs : &none_x},
             {"train.y.", train ? &*ys : &none_y},
             {"eval.x.", train ? &none_x : &*xs},
             {"eval.y.", train ? &none_y : &*ys}}) {
      absl::Status fed = session_->Feed(name + suffix, *tensor);
      if (!fed.ok()) return fed;
    }
  }
  submitted_.push_back(PieceResult{train, rows, 0, 0});
  return absl::OkStatus();
}

absl::StatusOr<PieceResult> MlpTrainer::FetchOne() {
  PieceResult result = submitted_.front();
  submitted_.pop_front();
  for (int k = 0; k < config_.towers; ++k) {
    const std::string suffix = absl::StrCat(k);
    auto train_loss = session_->Fetch("train.loss." + suffix);
    if (!train_loss.ok()) return train_loss.status();
    auto eval_loss = session_->Fetch("eval.loss." + suffix);
    if (!eval_loss.ok()) return eval_loss.status();
    auto correct = session_->Fetch("eval.correct." + suffix);
    if (!correct.ok()) return correct.status();
    const Tensor& loss = result.train ? *train_loss : *eval_loss;
    result.loss_sum += (*loss.data<double>())[0];
    result.correct += (*correct->data<int64_t>())[0];
  }
  return result;
}

absl::StatusOr<PieceResult> MlpTrainer::Collect() {
  if (ready_.empty()) {
    if (submitted_.empty()) {
      return absl::FailedPreconditionError("trainer: nothing submitted");
    }
    return FetchOne();
  }
  PieceResult result = ready_.front();
  ready_.pop_front();
  return result;
}

absl::Status MlpTrainer::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  while (!submitted_.empty()) {
    auto result = FetchOne();
    if (!result.ok()) return result.status();
    ready_.push_back(*result);
  }
  absl::Status closed = session_->CloseFeeds();
  if (!closed.ok()) return closed;
  return session_->Wait().status();
}

// ---- ReferenceTrainer ----

ReferenceTrainer::ReferenceTrainer(const MlpConfig& config) : config_(config) {
  const std::vector<ParamSpec> specs = Params(config);
  for (int i = 0; i < kNumParams; ++i) {
    const int64_t n = Elements(specs[i].shape);
    Param& p = params_[i];
    p.value.resize(n);
    (void)InitWeights(specs[i].init, specs[i].scale, ParamSeed(config.seed, i),
                      n, p.value.data());
    p.velocity.assign(n, 0.0f);
    p.delta.resize(n);
    p.grads.assign(config.towers, std::vector<float>(n));
  }
  const int64_t rows = TowerRows(config);
  z1_.resize(rows * config.hidden);
  h1_.resize(rows * config.hidden);
  z2_.resize(rows * config.classes);
  logits_.resize(rows * config.classes);
  dlogits_.resize(rows * config.classes);
  dh1_.resize(rows * config.hidden);
  dz1_.resize(rows * config.hidden);
}

absl::StatusOr<PieceResult> ReferenceTrainer::Run(const float* x,
                                                  const int32_t* labels,
                                                  int64_t rows, bool train) {
  const MlpConfig& c = config_;
  PieceResult result{train, rows, 0, 0};
  const float* w1 = params_[kW1].value.data();
  const float* b1 = params_[kB1].value.data();
  const float* w2 = params_[kW2].value.data();
  const float* b2 = params_[kB2].value.data();
  for (int k = 0; k < c.towers; ++k) {
    const int64_t begin = TowerBegin(rows, c.towers, k);
    const int64_t n = TowerBegin(rows, c.towers, k + 1) - begin;
    const float* xk = x + begin * c.inputs;
    const int32_t* yk = labels + begin;
    MatMul(xk, n, c.inputs, false, w1, c.inputs, c.hidden, false, z1_.data());
    BiasAdd(z1_.data(), b1, n, c.hidden, z1_.data());
    Relu(z1_.data(), n * c.hidden, h1_.data());
    MatMul(h1_.data(), n, c.hidden, false, w2, c.hidden, c.classes, false,
           z2_.data());
    BiasAdd(z2_.data(), b2, n, c.classes, logits_.data());
    double loss = 0;
    absl::Status status = SoftmaxCrossEntropy(logits_.data(), yk, n, c.classes,
                                              &loss, dlogits_.data());
    if (!status.ok()) return status;
    result.loss_sum += loss;
    if (!train) {
      result.correct += CountCorrect(logits_.data(), yk, n, c.classes);
      continue;
    }
    BiasAddGrad(dlogits_.data(), n, c.classes, params_[kB2].grads[k].data());
    MatMul(h1_.data(), n, c.hidden, true, dlogits_.data(), n, c.classes, false,
           params_[kW2].grads[k].data());
    MatMul(dlogits_.data(), n, c.classes, false, w2, c.hidden, c.classes, true,
           dh1_.data());
    ReluGrad(dh1_.data(), h1_.data(), n * c.hidden, dz1_.data());
    BiasAddGrad(dz1_.data(), n, c.hidden, params_[kB1].grads[k].data());
    MatMul(xk, n, c.inputs, true, dz1_.data(), n, c.hidden, false,
           params_[kW1].grads[k].data());
  }
  // As the plan: every piece steps every parameter, by zero when it trained
  // on nothing.
  const int64_t count = train ? rows : 0;
  const double lr = ScheduledRate(c.lr, c.decay, c.decay_steps, steps_);
  steps_ += count > 0;
  for (Param& p : params_) {
    std::vector<const float*> grads;
    for (const auto& g : p.grads) grads.push_back(g.data());
    const int64_t n = static_cast<int64_t>(p.value.size());
    SgdMomentum(grads, count, lr, c.momentum, n, p.velocity.data(),
                p.delta.data());
    ApplyDelta(p.value.data(), p.delta.data(), n, p.value.data());
  }
  return result;
}

}  // namespace actorflow::nn
