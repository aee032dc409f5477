#include "nn/mlp.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actorflow/tensor.h"
#include "compiler/job_builder.h"
#include "compiler/job_compiler.h"
#include "nn/dense_math.h"
#include "pipeline/dataset.h"
#include "plan/plan_builder.h"
#include "thread/balanced_splitter.h"

namespace actorflow::nn {
namespace {

int Layers(const MlpConfig& c) { return static_cast<int>(c.hidden.size()) + 1; }
int64_t InUnits(const MlpConfig& c, int i) {
  return i == 0 ? c.inputs : c.hidden[i - 1];
}
int64_t OutUnits(const MlpConfig& c, int i) {
  return i + 1 == Layers(c) ? c.classes : c.hidden[i];
}
bool IsHidden(const MlpConfig& c, int i) { return i + 1 < Layers(c); }

// Parameter 2i is layer i's weights, 2i + 1 its bias; each has its own
// seed (for one hidden layer, the same seeds as ever: w1 b1 w2 b2).
uint64_t ParamSeed(const MlpConfig& c, int param) {
  return c.seed * static_cast<uint64_t>(2 * Layers(c)) +
         static_cast<uint64_t>(param);
}
// He-uniform: uniform in [-sqrt(6 / fan_in), sqrt(6 / fan_in)).
double WeightScale(const MlpConfig& c, int i) {
  return std::sqrt(6.0 / static_cast<double>(InUnits(c, i)));
}

// Stream k's window of layer i's weights [in, out] and bias [out]:
// {row0, col0, rows, cols} and {begin, size}.
struct Window {
  int64_t row0 = 0, col0 = 0, rows = 0, cols = 0;
  int64_t bias0 = 0, bias_size = 0;
};
Window WindowOf(const MlpConfig& c, int i, int k) {
  const int64_t in = InUnits(c, i), out = OutUnits(c, i);
  Window w{0, 0, in, out, 0, out};
  const int n = c.streams;
  switch (SplitOf(c, i)) {
    case LayerSplit::kColumns:
      w.col0 = w.bias0 = SliceBegin(out, n, k);
      w.cols = w.bias_size = SliceBegin(out, n, k + 1) - w.col0;
      break;
    case LayerSplit::kRows:
      w.row0 = SliceBegin(in, n, k);
      w.rows = SliceBegin(in, n, k + 1) - w.row0;
      break;
    case LayerSplit::kReplicated:
      break;
  }
  return w;
}

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

int64_t SliceBegin(int64_t units, int streams, int k) {
  if (k >= streams) return units;
  return BalancedSplitter(units, streams).At(k).begin;
}

LayerSplit SplitOf(const MlpConfig& c, int i) {
  const int last = Layers(c) - 1;
  if (i < last) return i % 2 == 0 ? LayerSplit::kColumns : LayerSplit::kRows;
  // The output layer: rows after a column layer, else whole.
  return (last - 1) % 2 == 0 ? LayerSplit::kRows : LayerSplit::kReplicated;
}

absl::Status CheckConfig(const MlpConfig& c) {
  std::vector<std::string> problems;
  bool units_ok = c.inputs >= 1 && c.classes >= 2 && !c.hidden.empty();
  for (int64_t h : c.hidden) units_ok = units_ok && h >= 1;
  if (!units_ok) {
    problems.push_back(
        "inputs at least 1, at least one hidden layer of at least 1 unit, "
        "classes at least 2");
  }
  if (c.batch_size < 1) problems.push_back("batch_size: at least 1");
  if (c.streams < 1) {
    problems.push_back("streams: at least 1");
  } else if (units_ok) {
    for (int64_t h : c.hidden) {
      if (h < c.streams) {
        problems.push_back(absl::StrCat(
            "streams: at most the smallest hidden layer's units (",
            *std::min_element(c.hidden.begin(), c.hidden.end()), ")"));
        break;
      }
    }
  }
  if (!(c.lr > 0)) problems.push_back("lr: above 0");
  if (!(c.decay > 0 && c.decay <= 1) || c.decay_steps < 0) {
    problems.push_back("decay: in (0, 1], decay_steps: 0 or more");
  }
  if (!(c.momentum >= 0 && c.momentum < 1)) {
    problems.push_back("momentum: in [0, 1)");
  }
  if (c.depth < 1) problems.push_back("depth: at least 1");
  if (c.data && (c.data->epochs < 1 || c.data->std == 0)) {
    problems.push_back("data: epochs at least 1, std not 0");
  }
  if (problems.empty()) return absl::OkStatus();
  std::string text = "MLP config:";
  for (const std::string& p : problems) absl::StrAppend(&text, " ", p, ";");
  text.pop_back();
  return absl::InvalidArgumentError(text);
}

PieceResult MlpSchedule::Piece(int64_t p, int64_t batch_size) const {
  const int64_t q = p % period();
  PieceResult r;
  r.train = q < train_pieces;
  const int64_t index = r.train ? q : q - train_pieces;
  const int64_t samples = r.train ? train_samples : test_samples;
  r.rows = std::min(batch_size, samples - index * batch_size);
  return r;
}

absl::StatusOr<MlpSchedule> ScheduleOf(const MlpData& data,
                                       int64_t batch_size) {
  MlpSchedule s;
  auto count = [](const std::string& path,
                  int64_t limit) -> absl::StatusOr<int64_t> {
    auto dims = pipeline::ReadIdxHeader(path);
    if (!dims.ok()) return dims.status();
    if (dims->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": an IDX file without dimensions"));
    }
    return limit > 0 ? std::min((*dims)[0], limit) : (*dims)[0];
  };
  auto train = count(data.train_images, data.train_limit);
  if (!train.ok()) return train.status();
  auto test = count(data.test_images, data.test_limit);
  if (!test.ok()) return test.status();
  s.train_samples = *train;
  s.test_samples = *test;
  s.train_pieces = (*train + batch_size - 1) / batch_size;
  s.test_pieces = (*test + batch_size - 1) / batch_size;
  if (s.period() == 0) {
    return absl::InvalidArgumentError("MLP data: both sets are empty");
  }
  return s;
}

absl::StatusOr<Plan> BuildMlpPlan(const MlpConfig& c) {
  absl::Status ok = CheckConfig(c);
  if (!ok.ok()) return ok;
  MlpSchedule schedule;
  if (c.data) {
    auto s = ScheduleOf(*c.data, c.batch_size);
    if (!s.ok()) return s.status();
    schedule = *s;
  }
  const int n = c.streams;
  const int layers = Layers(c);
  const bool in_plan = c.data.has_value();
  const int results = c.depth + 1;  // never blocks on the caller
  // The towers are n replicas of device 0 (CPU or GPU: streams of one
  // device, in its memory); host-side inputs and results live on CPU
  // device 1.
  const int io = 1;
  JobBuilder job(in_plan ? c.data->epochs * schedule.period() : 0);
  using Op = JobBuilder::OpHandle;
  const DeviceType compute = c.gpu ? GPU : CPU;
  auto op = [&](const std::string& name, const std::string& op_type) {
    return job.Op(name, op_type).Place(compute, {0}).Replicas(n);
  };
  auto on_tower0 = [&](const std::string& name, const std::string& op_type) {
    return job.Op(name, op_type).Place(compute, {0});
  };
  auto host_op = [&](const std::string& name, const std::string& op_type,
                     std::vector<int32_t> devices) {
    return job.Op(name, op_type).Place(CPU, devices);
  };
  // Signatures, stated on several towers only (one holds the whole).
  enum Sig { kWhole, kRows, kCols, kPartial };
  auto sig = [](Sig s) {
    switch (s) {
      case kRows:
        return SplitSignature(0);
      case kCols:
        return SplitSignature(1);
      case kPartial:
        return PartialSumSignature();
      case kWhole:
        break;
    }
    return BroadcastSignature();
  };
  // Inputs as (text, signature), outputs as (name, signature).
  using Ins = std::vector<std::pair<std::string, Sig>>;
  auto wire = [&](Op o, const Ins& ins,
                  const std::vector<std::pair<std::string, Sig>>& outs) {
    const bool several = o.conf()->placement().replicas() > 1;
    for (const auto& [text, s] : ins) {
      o.Input(text);
      if (several) o.InputSignature(sig(s));
    }
    if (several) {
      for (const auto& [name, s] : outs) o.OutputSignature(name, sig(s));
    }
    return o;
  };
  auto fetch = [&](const std::string& name, const std::string& input) {
    host_op(name, "fetch", {in_plan && !c.gpu ? 0 : io}).Input(input);
  };

  // The data: whole batches, read by every tower.
  std::string tx = "train.x", ty = "train.y", ex = "eval.x", ey = "eval.y";
  if (in_plan) {
    const MlpData& d = *c.data;
    for (bool train : {true, false}) {
      const std::string name = train ? "data.train" : "data.eval";
      // On CPU towers each reads its own copy (no thread waits on another
      // per piece); for GPU towers one host source is copied to each.
      Op source =
          c.gpu ? host_op(name, "idx_batches", {io}) : op(name, "idx_batches");
      source.Attr("images", train ? d.train_images : d.test_images)
          .Attr("labels", train ? d.train_labels : d.test_labels)
          .Attr("limit", train ? d.train_limit : d.test_limit)
          .Attr("batch", c.batch_size)
          .Attr("shuffle_window", train ? d.shuffle_window : 0)
          .Attr("seed", static_cast<int64_t>(d.seed))
          .Attr("mean", d.mean)
          .Attr("std", d.std)
          .Attr("period", schedule.period())
          .Attr("offset", train ? int64_t{0} : schedule.train_pieces)
          .Output("x")  // eval: y unread past tower 0
          .Output("y")
          .RegisterNum("x", c.depth)
          .RegisterNum("y", c.depth);
      if (!c.gpu) {
        source.OutputSignature("x", sig(kWhole));
        source.OutputSignature("y", sig(kWhole));
      }
      (train ? tx : ex) = name + ".x";
      (train ? ty : ey) = name + ".y";
    }
  } else {
    const int64_t b = c.batch_size;
    auto feed = [&](const std::string& name, BlobDescProto blob) {
      host_op(name, "feed", {io}).Blob(blob).RegisterNum("out", results);
    };
    feed("train.x", BlobProto("x", DT_FLOAT32, {b, c.inputs}, true));
    feed("train.y", BlobProto("y", DT_INT32, {b}, true));
    feed("eval.x", BlobProto("x", DT_FLOAT32, {b, c.inputs}, true));
    feed("eval.y", BlobProto("y", DT_INT32, {b}, true));
  }

  // Per layer, how its weights, bias, output and activation lie over the
  // towers: a column layer splits its output units, a row layer its input
  // units (its products are partial sums), a replicated one is whole.
  auto weight_sig = [&](int i) {
    switch (SplitOf(c, i)) {
      case LayerSplit::kColumns:
        return kCols;
      case LayerSplit::kRows:
        return kRows;
      case LayerSplit::kReplicated:
        break;
    }
    return kWhole;
  };
  auto bias_sig = [&](int i) {
    return SplitOf(c, i) == LayerSplit::kColumns ? kRows : kWhole;
  };
  auto act_sig = [&](int i) {
    return SplitOf(c, i) == LayerSplit::kColumns ? kCols : kWhole;
  };
  // The parameters: variables (initial registers; a split one starts from
  // its window of the whole matrix's values) fed back by their optimizers.
  for (int i = 0; i < layers; ++i) {
    for (bool is_bias : {false, true}) {
      const std::string name = absl::StrCat(is_bias ? "b" : "w", i);
      const Sig s = is_bias ? bias_sig(i) : weight_sig(i);
      Op var =
          wire(op(name, "variable").Initial(),
               {{absl::StrCat("delta=", name, ".sgd.delta"), s}}, {{"out", s}});
      if (is_bias) {
        var.Attr("init", "zeros");
        var.Blob(BlobProto("b", DT_FLOAT32, {OutUnits(c, i)}));
      } else {
        var.Attr("init", "uniform")
            .Attr("scale", WeightScale(c, i))
            .Attr("seed", static_cast<int64_t>(ParamSeed(c, 2 * i)))
            .Attr("full_shape", IntListAttr({InUnits(c, i), OutUnits(c, i)}))
            .Blob(BlobProto("w", DT_FLOAT32, {InUnits(c, i), OutUnits(c, i)}));
      }
    }
  }

  // Evaluation stops on towers past 0 after the last row layer's partial
  // products, the last thing tower 0 needs from them.
  int last_row = 0;
  for (int i = 0; i < layers; ++i) {
    if (SplitOf(c, i) == LayerSplit::kRows) last_row = i;
  }
  auto place = [&](bool every_tower, const std::string& name,
                   const std::string& op_type) {
    return every_tower ? op(name, op_type) : on_tower0(name, op_type);
  };
  // The forward pass of a branch: per layer its input and activation.
  struct Forward {
    std::vector<std::string> input, act;
  };
  auto forward = [&](const std::string& branch, bool train) {
    Forward f{std::vector<std::string>(layers + 1),
              std::vector<std::string>(layers)};
    f.input[0] = train ? tx : ex;
    for (int i = 0; i < layers; ++i) {
      const std::string p = absl::StrCat(branch, ".l", i);
      const LayerSplit split = SplitOf(c, i);
      const bool everywhere = train || i < last_row;
      const Sig in = split == LayerSplit::kRows ? kCols : kWhole;
      const Sig product = split == LayerSplit::kRows ? kPartial : act_sig(i);
      wire(place(everywhere || i == last_row, p + ".matmul", "matmul"),
           {{"a=" + f.input[i], in}, {absl::StrCat("b=w", i), weight_sig(i)}},
           {{"out", product}});
      wire(place(everywhere, p + ".bias", "bias_add"),
           {{"x=" + p + ".matmul", act_sig(i)},
            {absl::StrCat("bias=b", i), bias_sig(i)}},
           {{"out", act_sig(i)}});
      f.act[i] = p + ".bias";
      if (IsHidden(c, i)) {
        wire(place(everywhere, p + ".relu", "relu"), {{f.act[i], act_sig(i)}},
             {{"out", act_sig(i)}});
        f.act[i] = p + ".relu";
      }
      f.input[i + 1] = f.act[i];
    }
    return f;
  };

  // Training: forward, loss, backward, updates.
  Forward t = forward("t", true);
  wire(op("t.loss", "softmax_xent"),
       {{"logits=" + t.act[layers - 1], kWhole}, {"labels=" + ty, kWhole}},
       {{"loss", kWhole}, {"dlogits", kWhole}})
      .RegisterNum("loss", results);
  fetch("train.loss", "t.loss.loss");
  std::string dz = "t.loss.dlogits";  // at layer i's pre-activation
  for (int i = layers - 1; i >= 0; --i) {
    const std::string p = absl::StrCat("t.l", i);
    const LayerSplit split = SplitOf(c, i);
    const Sig dz_sig = act_sig(i);
    auto update = [&](const std::string& param, const std::string& grad,
                      Sig s) {
      wire(op(param + ".sgd", "sgd_momentum"),
           {{"grad=" + grad, s}, {"batch=" + ty, kWhole}}, {{"delta", s}})
          .Attr("lr", c.lr)
          .Attr("momentum", c.momentum)
          .Attr("decay", c.decay)
          .Attr("decay_steps", c.decay_steps);
    };
    wire(op(p + ".bias.grad", "bias_add_grad"), {{"dy=" + dz, dz_sig}},
         {{"out", bias_sig(i)}});
    update(absl::StrCat("b", i), p + ".bias.grad", bias_sig(i));
    wire(op(p + ".grad_w", "matmul").Attr("transpose_a", true),
         {{"a=" + t.input[i], split == LayerSplit::kRows ? kCols : kWhole},
          {"b=" + dz, dz_sig}},
         {{"out", weight_sig(i)}});
    update(absl::StrCat("w", i), p + ".grad_w", weight_sig(i));
    if (i == 0) break;
    // The gradient at layer i's input: a column layer's is a partial sum
    // (summed for the ReLU below), a row layer's is split like its input.
    const Sig dx = split == LayerSplit::kColumns ? kPartial
                   : split == LayerSplit::kRows  ? kCols
                                                 : kWhole;
    wire(op(p + ".grad_x", "matmul").Attr("transpose_b", true),
         {{"a=" + dz, dz_sig}, {absl::StrCat("b=w", i), weight_sig(i)}},
         {{"out", dx}});
    const std::string relu_grad = absl::StrCat("t.l", i - 1, ".relu.grad");
    wire(op(relu_grad, "relu_grad"),
         {{"dy=" + p + ".grad_x", act_sig(i - 1)},
          {"y=" + t.act[i - 1], act_sig(i - 1)}},
         {{"out", act_sig(i - 1)}});
    dz = relu_grad;
  }

  // Evaluation: loss and accuracy on tower 0.
  Forward e = forward("e", false);
  on_tower0("e.loss", "softmax_xent")
      .Input("logits=" + e.act[layers - 1])
      .Input("labels=" + ey)
      .Output("dlogits")
      .RegisterNum("loss", results);
  fetch("eval.loss", "e.loss.loss");
  on_tower0("e.acc", "accuracy")
      .Input("logits=" + e.act[layers - 1])
      .Input("labels=" + ey)
      .RegisterNum("out", results);
  fetch("eval.correct", "e.acc");

  absl::StatusOr<CompiledJob> compiled = CompileJob(job.job());
  if (!compiled.ok()) return compiled.status();
  return std::move(compiled->plan);
}

// ---- MlpTrainer ----

absl::StatusOr<std::unique_ptr<MlpTrainer>> MlpTrainer::Create(
    const MlpConfig& config, bool trace) {
  auto plan = BuildMlpPlan(config);
  if (!plan.ok()) return plan.status();
  std::unique_ptr<MlpTrainer> trainer(new MlpTrainer());
  trainer->config_ = config;
  trainer->plan_ = *plan;
  if (config.data) {
    auto schedule = ScheduleOf(*config.data, config.batch_size);
    if (!schedule.ok()) return schedule.status();
    trainer->schedule_ = *schedule;
  }
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
  if (config_.data) {
    return absl::FailedPreconditionError(
        "trainer: this plan reads its own data (MlpConfig::data): Start it");
  }
  if (rows < 0 || rows > config_.batch_size) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: a piece holds 0 to ", config_.batch_size,
                     " rows, got ", rows));
  }
  while (static_cast<int64_t>(submitted_.size()) >= config_.depth) {
    auto result = FetchOne(submitted_.front());
    submitted_.pop_front();
    if (!result.ok()) return result.status();
    ready_.push_back(*result);
  }
  const int64_t width = config_.inputs;
  auto xs = Tensor::FromValues<float>({rows, width},
                                      absl::MakeConstSpan(x, rows * width));
  auto ys =
      Tensor::FromValues<int32_t>({rows}, absl::MakeConstSpan(labels, rows));
  if (!xs.ok()) return xs.status();
  if (!ys.ok()) return ys.status();
  const Tensor none_x(DT_FLOAT32, {0, width});
  const Tensor none_y(DT_INT32, {0});
  for (const auto& [name, tensor] :
       std::vector<std::pair<std::string, const Tensor*>>{
           {"train.x", train ? &*xs : &none_x},
           {"train.y", train ? &*ys : &none_y},
           {"eval.x", train ? &none_x : &*xs},
           {"eval.y", train ? &none_y : &*ys}}) {
    absl::Status fed = session_->Feed(name, *tensor);
    if (!fed.ok()) return fed;
  }
  submitted_.push_back(PieceResult{train, rows, 0, 0});
  return absl::OkStatus();
}

absl::Status MlpTrainer::Start(int64_t pieces) { return Start(pieces, {}); }

absl::Status MlpTrainer::Start(int64_t pieces, std::vector<int64_t> cuts) {
  if (!config_.data) {
    return absl::FailedPreconditionError(
        "trainer: this plan is fed (no MlpConfig::data): Submit pieces");
  }
  if (finished_) return absl::FailedPreconditionError("trainer: finished");
  const int64_t total = config_.data->epochs * schedule_.period();
  const int64_t done = std::max<int64_t>(started_, 0);
  if (collected_ < done) {
    return absl::FailedPreconditionError(
        absl::StrCat("trainer: collect the last run's pieces first (",
                     done - collected_, " left)"));
  }
  if (pieces < 0) pieces = total - done;
  if (pieces == 0 || done + pieces > total) {
    return absl::InvalidArgumentError(
        absl::StrCat("trainer: ", pieces, " pieces asked for, ", total - done,
                     " left in the schedule"));
  }
  if (running_) {
    absl::Status ended = session_->Wait().status();
    running_ = false;
    if (!ended.ok()) return ended;
  }
  absl::Status started = session_->Start(pieces, std::move(cuts));
  if (!started.ok()) return started;
  running_ = true;
  started_ = done + pieces;
  return absl::OkStatus();
}

absl::StatusOr<CheckpointInfo> MlpTrainer::Restore(const std::string& dir) {
  if (started_ >= 0 || !submitted_.empty() || !ready_.empty() || finished_) {
    return absl::FailedPreconditionError(
        "trainer: restore before the first Start or Submit");
  }
  absl::StatusOr<CheckpointInfo> info = session_->Restore(dir);
  if (!info.ok()) return info.status();
  if (config_.data) {
    const int64_t total = config_.data->epochs * schedule_.period();
    if (info->piece > total) {
      return absl::FailedPreconditionError(
          absl::StrCat("trainer: checkpoint '", info->path, "' is at piece ",
                       info->piece, ", past the schedule's ", total));
    }
    started_ = collected_ = info->piece;
  }
  return info;
}

absl::StatusOr<PieceResult> MlpTrainer::FetchOne(PieceResult result) {
  auto train_loss = session_->Fetch("train.loss");
  if (!train_loss.ok()) return train_loss.status();
  auto eval_loss = session_->Fetch("eval.loss");
  if (!eval_loss.ok()) return eval_loss.status();
  auto correct = session_->Fetch("eval.correct");
  if (!correct.ok()) return correct.status();
  const Tensor& loss = result.train ? *train_loss : *eval_loss;
  result.loss_sum = (*loss.data<double>())[0];
  result.correct = (*correct->data<int64_t>())[0];
  return result;
}

absl::StatusOr<PieceResult> MlpTrainer::Collect() {
  if (started_ >= 0) {
    if (collected_ == started_) {
      return absl::FailedPreconditionError("trainer: every piece collected");
    }
    return FetchOne(schedule_.Piece(collected_++, config_.batch_size));
  }
  if (ready_.empty()) {
    if (submitted_.empty()) {
      return absl::FailedPreconditionError("trainer: nothing submitted");
    }
    PieceResult piece = submitted_.front();
    submitted_.pop_front();
    return FetchOne(piece);
  }
  PieceResult result = ready_.front();
  ready_.pop_front();
  return result;
}

absl::Status MlpTrainer::Finish() {
  if (finished_) return absl::OkStatus();
  finished_ = true;
  if (started_ >= 0) {
    while (collected_ < started_) {
      auto result = Collect();
      if (!result.ok()) return result.status();
    }
    if (!running_) return absl::OkStatus();
    running_ = false;
    return session_->Wait().status();
  }
  while (!submitted_.empty()) {
    auto result = FetchOne(submitted_.front());
    submitted_.pop_front();
    if (!result.ok()) return result.status();
    ready_.push_back(*result);
  }
  absl::Status closed = session_->CloseFeeds();
  if (!closed.ok()) return closed;
  return session_->Wait().status();
}

// ---- ReferenceTrainer ----

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

}  // namespace actorflow::nn
