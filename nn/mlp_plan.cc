#include "nn/mlp_plan.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/job_builder.h"
#include "actorflow/job_compiler.h"
#include "plan/plan_builder.h"

namespace actorflow::internal::nn {
namespace {

// How a tensor lies over the towers, as a signature stated on operators
// that run on several towers (one tower holds the whole).
enum Sig { kWhole, kRows, kCols, kPartial };

ParallelSignature SignatureOf(Sig s) {
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
}

// Inputs as (text, signature), outputs as (name, signature).
using Wires = std::vector<std::pair<std::string, Sig>>;

// The plan as a job, written in steps: the data, the parameters, the
// training branch (forward, loss, backward, updates), the evaluation
// branch; then compiled. The towers are `streams` replicas of device 0
// (CPU or GPU: streams of one device, in its memory); host-side inputs and
// results live on CPU device 1.
class MlpPlanWriter {
 public:
  MlpPlanWriter(const MlpConfig& c, const MlpSchedule& schedule)
      : c_(c),
        schedule_(schedule),
        layers_(Layers(c)),
        in_plan_(c.data.has_value()),
        job_(in_plan_ ? c.data->epochs * schedule.period() : 0) {
    for (int i = 0; i < layers_; ++i) {
      if (SplitOf(c_, i) == LayerSplit::kRows) last_row_ = i;
    }
  }

  absl::StatusOr<Plan> Write() {
    AddData();
    AddParameters();
    AddTraining();
    AddEvaluation();
    absl::StatusOr<CompiledJob> compiled = CompileJob(job_.job());
    if (!compiled.ok()) return compiled.status();
    return std::move(compiled->plan);
  }

 private:
  using Op = JobBuilder::OpHandle;
  static constexpr int kHostDevice = 1;

  // An operator on every tower, on tower 0 only, or on host devices.
  Op OnTowers(const std::string& name, const std::string& op_type) {
    return job_.Op(name, op_type).Place(Compute(), {0}).Replicas(c_.streams);
  }
  Op OnTower0(const std::string& name, const std::string& op_type) {
    return job_.Op(name, op_type).Place(Compute(), {0});
  }
  Op OnHost(const std::string& name, const std::string& op_type,
            std::vector<int32_t> devices) {
    return job_.Op(name, op_type).Place(DeviceKind::kCpu, std::move(devices));
  }
  Op Place(bool every_tower, const std::string& name,
           const std::string& op_type) {
    return every_tower ? OnTowers(name, op_type) : OnTower0(name, op_type);
  }
  DeviceKind Compute() const {
    return c_.gpu ? DeviceKind::kGpu : DeviceKind::kCpu;
  }
  // Results wanted by the caller: one more than `depth`, so that the plan
  // never blocks on the caller.
  int Results() const { return c_.depth + 1; }

  // Connects `o`'s inputs, stating signatures where it runs on several
  // towers.
  Op Wire(Op o, const Wires& ins, const Wires& outs) {
    const bool several = o.conf()->placement().replicas() > 1;
    for (const auto& [text, s] : ins) {
      o.Input(text);
      if (several) o.InputSignature(SignatureOf(s));
    }
    if (several) {
      for (const auto& [name, s] : outs) {
        o.OutputSignature(name, SignatureOf(s));
      }
    }
    return o;
  }
  void Fetch(const std::string& name, const std::string& input) {
    OnHost(name, "fetch", {in_plan_ && !c_.gpu ? 0 : kHostDevice}).Input(input);
  }

  // Per layer, how its weights, bias, output and activation lie over the
  // towers: a column layer splits its output units, a row layer its input
  // units (its products are partial sums), a replicated one is whole.
  Sig WeightSig(int i) const {
    switch (SplitOf(c_, i)) {
      case LayerSplit::kColumns:
        return kCols;
      case LayerSplit::kRows:
        return kRows;
      case LayerSplit::kReplicated:
        break;
    }
    return kWhole;
  }
  Sig BiasSig(int i) const {
    return SplitOf(c_, i) == LayerSplit::kColumns ? kRows : kWhole;
  }
  Sig ActSig(int i) const {
    return SplitOf(c_, i) == LayerSplit::kColumns ? kCols : kWhole;
  }

  // The data: whole batches read by every tower, from the dataset's IDX
  // files (with MlpConfig::data) or fed by the caller.
  void AddData() {
    if (!in_plan_) {
      const int64_t b = c_.batch_size;
      auto feed = [&](const std::string& name, BlobDescProto blob) {
        OnHost(name, "feed", {kHostDevice})
            .Blob(std::move(blob))
            .RegisterNum("out", Results());
      };
      feed("train.x", BlobProto("x", DT_FLOAT32, {b, c_.inputs}, true));
      feed("train.y", BlobProto("y", DT_INT32, {b}, true));
      feed("eval.x", BlobProto("x", DT_FLOAT32, {b, c_.inputs}, true));
      feed("eval.y", BlobProto("y", DT_INT32, {b}, true));
      return;
    }
    const MlpData& d = *c_.data;
    for (bool train : {true, false}) {
      const std::string name = train ? "data.train" : "data.eval";
      // On CPU towers each reads its own copy (no thread waits on another
      // per piece); for GPU towers one host source is copied to each.
      Op source = c_.gpu ? OnHost(name, "idx_batches", {kHostDevice})
                         : OnTowers(name, "idx_batches");
      source.Attr("images", train ? d.train_images : d.test_images)
          .Attr("labels", train ? d.train_labels : d.test_labels)
          .Attr("limit", train ? d.train_limit : d.test_limit)
          .Attr("batch", c_.batch_size)
          .Attr("shuffle_window", train ? d.shuffle_window : 0)
          .Attr("seed", static_cast<int64_t>(d.seed))
          .Attr("mean", d.mean)
          .Attr("std", d.std)
          .Attr("period", schedule_.period())
          .Attr("offset", train ? int64_t{0} : schedule_.train_pieces)
          .Output("x")  // eval: y unread past tower 0
          .Output("y")
          .RegisterNum("x", c_.depth)
          .RegisterNum("y", c_.depth);
      if (!c_.gpu) {
        source.OutputSignature("x", SignatureOf(kWhole));
        source.OutputSignature("y", SignatureOf(kWhole));
      }
      (train ? train_x_ : eval_x_) = name + ".x";
      (train ? train_y_ : eval_y_) = name + ".y";
    }
  }

  // The parameters: variables (initial registers; a split one starts from
  // its window of the whole matrix's values) fed back by their optimizers.
  void AddParameters() {
    for (int i = 0; i < layers_; ++i) {
      for (bool is_bias : {false, true}) {
        const std::string name = absl::StrCat(is_bias ? "b" : "w", i);
        const Sig s = is_bias ? BiasSig(i) : WeightSig(i);
        Op var = Wire(OnTowers(name, "variable").Initial(),
                      {{absl::StrCat("delta=", name, ".sgd.delta"), s}},
                      {{"out", s}});
        if (is_bias) {
          var.Attr("init", "zeros");
          var.Blob(BlobProto("b", DT_FLOAT32, {OutUnits(c_, i)}));
        } else {
          var.Attr("init", "uniform")
              .Attr("scale", WeightScale(c_, i))
              .Attr("seed", static_cast<int64_t>(ParamSeed(c_, 2 * i)))
              .Attr("full_shape",
                    IntListAttr({InUnits(c_, i), OutUnits(c_, i)}))
              .Blob(BlobProto("w", DT_FLOAT32,
                              {InUnits(c_, i), OutUnits(c_, i)}));
        }
      }
    }
  }

  // The forward pass of a branch: per layer its input and activation.
  struct Forward {
    std::vector<std::string> input, act;
  };
  // Evaluation stops on towers past 0 after the last row layer's partial
  // products, the last thing tower 0 needs from them.
  Forward AddForward(const std::string& branch, bool train) {
    Forward f{std::vector<std::string>(layers_ + 1),
              std::vector<std::string>(layers_)};
    f.input[0] = train ? train_x_ : eval_x_;
    for (int i = 0; i < layers_; ++i) {
      const std::string p = absl::StrCat(branch, ".l", i);
      const LayerSplit split = SplitOf(c_, i);
      const bool everywhere = train || i < last_row_;
      const Sig in = split == LayerSplit::kRows ? kCols : kWhole;
      const Sig product = split == LayerSplit::kRows ? kPartial : ActSig(i);
      Wire(Place(everywhere || i == last_row_, p + ".matmul", "matmul"),
           {{"a=" + f.input[i], in}, {absl::StrCat("b=w", i), WeightSig(i)}},
           {{"out", product}});
      Wire(Place(everywhere, p + ".bias", "bias_add"),
           {{"x=" + p + ".matmul", ActSig(i)},
            {absl::StrCat("bias=b", i), BiasSig(i)}},
           {{"out", ActSig(i)}});
      f.act[i] = p + ".bias";
      if (IsHidden(c_, i)) {
        Wire(Place(everywhere, p + ".relu", "relu"), {{f.act[i], ActSig(i)}},
             {{"out", ActSig(i)}});
        f.act[i] = p + ".relu";
      }
      f.input[i + 1] = f.act[i];
    }
    return f;
  }

  // An optimizer step for `param` from its gradient `grad`.
  void AddUpdate(const std::string& param, const std::string& grad, Sig s) {
    Wire(OnTowers(param + ".sgd", "sgd_momentum"),
         {{"grad=" + grad, s}, {"batch=" + train_y_, kWhole}}, {{"delta", s}})
        .Attr("lr", c_.lr)
        .Attr("momentum", c_.momentum)
        .Attr("decay", c_.decay)
        .Attr("decay_steps", c_.decay_steps);
  }

  // Training: forward, loss, backward, updates.
  void AddTraining() {
    const Forward t = AddForward("t", true);
    Wire(OnTowers("t.loss", "softmax_xent"),
         {{"logits=" + t.act[layers_ - 1], kWhole},
          {"labels=" + train_y_, kWhole}},
         {{"loss", kWhole}, {"dlogits", kWhole}})
        .RegisterNum("loss", Results());
    Fetch("train.loss", "t.loss.loss");
    std::string dz = "t.loss.dlogits";  // at layer i's pre-activation
    for (int i = layers_ - 1; i >= 0; --i) {
      const std::string p = absl::StrCat("t.l", i);
      const LayerSplit split = SplitOf(c_, i);
      const Sig dz_sig = ActSig(i);
      Wire(OnTowers(p + ".bias.grad", "bias_add_grad"), {{"dy=" + dz, dz_sig}},
           {{"out", BiasSig(i)}});
      AddUpdate(absl::StrCat("b", i), p + ".bias.grad", BiasSig(i));
      Wire(OnTowers(p + ".grad_w", "matmul").Attr("transpose_a", true),
           {{"a=" + t.input[i], split == LayerSplit::kRows ? kCols : kWhole},
            {"b=" + dz, dz_sig}},
           {{"out", WeightSig(i)}});
      AddUpdate(absl::StrCat("w", i), p + ".grad_w", WeightSig(i));
      if (i == 0) break;
      // The gradient at layer i's input: a column layer's is a partial sum
      // (summed for the ReLU below), a row layer's is split like its input.
      const Sig dx = split == LayerSplit::kColumns ? kPartial
                     : split == LayerSplit::kRows  ? kCols
                                                   : kWhole;
      Wire(OnTowers(p + ".grad_x", "matmul").Attr("transpose_b", true),
           {{"a=" + dz, dz_sig}, {absl::StrCat("b=w", i), WeightSig(i)}},
           {{"out", dx}});
      const std::string relu_grad = absl::StrCat("t.l", i - 1, ".relu.grad");
      Wire(OnTowers(relu_grad, "relu_grad"),
           {{"dy=" + p + ".grad_x", ActSig(i - 1)},
            {"y=" + t.act[i - 1], ActSig(i - 1)}},
           {{"out", ActSig(i - 1)}});
      dz = relu_grad;
    }
  }

  // Evaluation: loss and accuracy on tower 0.
  void AddEvaluation() {
    const Forward e = AddForward("e", false);
    OnTower0("e.loss", "softmax_xent")
        .Input("logits=" + e.act[layers_ - 1])
        .Input("labels=" + eval_y_)
        .Output("dlogits")
        .RegisterNum("loss", Results());
    Fetch("eval.loss", "e.loss.loss");
    OnTower0("e.acc", "accuracy")
        .Input("logits=" + e.act[layers_ - 1])
        .Input("labels=" + eval_y_)
        .RegisterNum("out", Results());
    Fetch("eval.correct", "e.acc");
  }

  const MlpConfig& c_;
  const MlpSchedule& schedule_;
  const int layers_;
  const bool in_plan_;
  int last_row_ = 0;
  JobBuilder job_;
  // The batches' tensors, as inputs name them.
  std::string train_x_ = "train.x", train_y_ = "train.y";
  std::string eval_x_ = "eval.x", eval_y_ = "eval.y";
};

}  // namespace

absl::StatusOr<Plan> BuildMlpPlan(const MlpConfig& c) {
  absl::Status ok = CheckConfig(c);
  if (!ok.ok()) return ok;
  MlpSchedule schedule;
  if (c.data) {
    absl::StatusOr<MlpSchedule> s = ScheduleOf(*c.data, c.batch_size);
    if (!s.ok()) return s.status();
    schedule = *s;
  }
  return MlpPlanWriter(c, schedule).Write();
}

}  // namespace actorflow::internal::nn
