#include "nn/nn_kernels.h"

#include <cstring>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "actor/parallel_part.h"
#include "nn/dense_math.h"

namespace actorflow::internal::nn {
namespace {

const std::string& OpType(const KernelInitContext& ctx) {
  return ctx.op_type();
}

// The task consumes exactly `inputs` (each once, except those in `many`,
// which may come one or more times) and produces exactly `outputs`.
absl::Status ExpectNames(const KernelInitContext& ctx,
                         const std::vector<std::string>& inputs,
                         const std::vector<std::string>& outputs,
                         const std::vector<std::string>& many = {}) {
  std::map<std::string, int> seen;
  for (const KernelIo& io : ctx.inputs()) ++seen[io.name];
  for (const auto& [name, count] : seen) {
    if (std::find(inputs.begin(), inputs.end(), name) == inputs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("consumed_regst_desc_id['", name, "']: ", OpType(ctx),
                       " consumes ", absl::StrJoin(inputs, ", ")));
    }
    if (count > 1 && std::find(many.begin(), many.end(), name) == many.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("consumed_regst_desc_id['", name, "']: ", OpType(ctx),
                       " takes one register there, got ", count));
    }
  }
  for (const std::string& name : inputs) {
    if (!seen.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "consumed_regst_desc_id['", name, "']: missing (", OpType(ctx),
          " consumes ", absl::StrJoin(inputs, ", "), ")"));
    }
  }
  std::set<std::string> produced;
  for (const KernelIo& io : ctx.outputs()) {
    if (std::find(outputs.begin(), outputs.end(), io.name) == outputs.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("produced_regst_desc['", io.name, "']: ", OpType(ctx),
                       " produces ", absl::StrJoin(outputs, ", ")));
    }
    produced.insert(io.name);
  }
  for (const std::string& name : outputs) {
    if (!produced.count(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "produced_regst_desc['", name, "']: missing (", OpType(ctx),
          " produces ", absl::StrJoin(outputs, ", "), ")"));
    }
  }
  return absl::OkStatus();
}

// The one blob of input `name` (i-th register), of `type` and `rank`.
absl::StatusOr<BlobDesc> OneBlob(const KernelInitContext& ctx,
                                 const std::string& name, DataType type,
                                 int rank, int i = 0) {
  const KernelIo* io = ctx.input(name, i);
  auto wrong = [&](const std::string& got) {
    return absl::InvalidArgumentError(absl::StrCat(
        "consumed_regst_desc_id['", name, "'] (regst_desc ", io->regst_desc_id,
        "): ", OpType(ctx), " wants one ", DataTypeName(type), " blob of rank ",
        rank, ", got ", got));
  };
  if (io->blobs.size() != 1) {
    return wrong(absl::StrCat(io->blobs.size(), " blobs"));
  }
  const BlobDesc& blob = io->blobs[0];
  if (blob.data_type != type || static_cast<int>(blob.shape.size()) != rank) {
    return wrong(blob.ToString());
  }
  return blob;
}

}  // namespace

const float* Floats(ConstTensorView view) {
  return static_cast<const float*>(view.raw_data());
}
float* Floats(TensorView view) {
  return static_cast<float*>(view.mutable_raw_data());
}

// Gives a dynamic output the piece's shape; a static one must already have
// it.
absl::Status Shape(TensorView out, absl::Span<const int64_t> shape) {
  if (out.is_dynamic()) return out.set_shape(shape);
  if (out.shape() == shape) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "output '", out.name(), "' is static ", ShapeString(out.shape()),
      " but this piece makes ", ShapeString(shape)));
}

absl::Status SameShape(ConstTensorView a, ConstTensorView b) {
  if (a.shape() == b.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "blob '", a.name(), "' is ", ShapeString(a.shape()), " but blob '",
      b.name(), "' is ", ShapeString(b.shape()), " in this piece"));
}

// --- matmul -----------------------------------------------------------

absl::StatusOr<std::vector<int64_t>> MatMulKernel::OutputShape(
    absl::Span<const int64_t> a, absl::Span<const int64_t> b) const {
  const int64_t k_a = transpose_a_ ? a[0] : a[1];
  const int64_t k_b = transpose_b_ ? b[1] : b[0];
  if (k_a != k_b) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul: inner sizes differ: a ", ShapeString(a),
                     transpose_a_ ? " (transposed)" : "", " and b ",
                     ShapeString(b), transpose_b_ ? " (transposed)" : ""));
  }
  return std::vector<int64_t>{transpose_a_ ? a[1] : a[0],
                              transpose_b_ ? b[0] : b[1]};
}

absl::Status MatMulKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ExpectNames(ctx, {"a", "b"}, {"out"});
  if (!status.ok()) return status;
  auto ta = ctx.BoolAttrOr("transpose_a", false);
  auto tb = ctx.BoolAttrOr("transpose_b", false);
  if (!ta.ok()) return ta.status();
  if (!tb.ok()) return tb.status();
  transpose_a_ = *ta;
  transpose_b_ = *tb;
  auto a = OneBlob(ctx, "a", DT_FLOAT32, 2);
  if (!a.ok()) return a.status();
  auto b = OneBlob(ctx, "b", DT_FLOAT32, 2);
  if (!b.ok()) return b.status();
  // Dynamic dimensions are checked per piece; static ones here.
  if (!a->is_dynamic && !b->is_dynamic) {
    auto shape = OutputShape(a->shape, b->shape);
    if (!shape.ok()) return shape.status();
  }
  std::vector<int64_t> shape = {transpose_a_ ? a->shape[1] : a->shape[0],
                                transpose_b_ ? b->shape[0] : b->shape[1]};
  const bool dynamic =
      (a->is_dynamic && !transpose_a_) || (b->is_dynamic && transpose_b_);
  return ctx.SetOutputBlobs("out",
                            {BlobDesc{"out", DT_FLOAT32, shape, dynamic}});
}

absl::Status MatMulKernel::Forward(KernelContext* ctx) {
  ConstTensorView a = ctx->input("a").blob(0);
  ConstTensorView b = ctx->input("b").blob(0);
  TensorView out = ctx->output("out").blob(0);
  auto shape = OutputShape(a.shape(), b.shape());
  if (!shape.ok()) return shape.status();
  absl::Status status = Shape(out, *shape);
  if (!status.ok()) return status;
  MatMul(Floats(a), a.shape()[0], a.shape()[1], transpose_a_, Floats(b),
         b.shape()[0], b.shape()[1], transpose_b_, Floats(out));
  return absl::OkStatus();
}

// --- bias_add, bias_add_grad --------------------------------------------

absl::Status BiasAddKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ExpectNames(ctx, {"x", "bias"}, {"out"});
  if (!status.ok()) return status;
  auto x = OneBlob(ctx, "x", DT_FLOAT32, 2);
  if (!x.ok()) return x.status();
  auto bias = OneBlob(ctx, "bias", DT_FLOAT32, 1);
  if (!bias.ok()) return bias.status();
  if (bias->is_dynamic || bias->shape[0] != x->shape[1]) {
    return absl::InvalidArgumentError(
        absl::StrCat("bias_add: bias ", bias->ToString(), " must be static [",
                     x->shape[1], "] for x ", x->ToString()));
  }
  BlobDesc out = *x;
  out.name = "out";
  return ctx.SetOutputBlobs("out", {out});
}

absl::Status BiasAddKernel::Forward(KernelContext* ctx) {
  ConstTensorView x = ctx->input("x").blob(0);
  ConstTensorView bias = ctx->input("bias").blob(0);
  TensorView out = ctx->output("out").blob(0);
  absl::Status status = Shape(out, x.shape());
  if (!status.ok()) return status;
  if (x.shape()[1] != bias.shape()[0]) {
    return SameShape(x, bias);  // the message names both
  }
  BiasAdd(Floats(x), Floats(bias), x.shape()[0], x.shape()[1], Floats(out));
  return absl::OkStatus();
}

absl::Status BiasAddGradKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ExpectNames(ctx, {"dy"}, {"out"});
  if (!status.ok()) return status;
  auto dy = OneBlob(ctx, "dy", DT_FLOAT32, 2);
  if (!dy.ok()) return dy.status();
  return ctx.SetOutputBlobs(
      "out", {BlobDesc{"out", DT_FLOAT32, {dy->shape[1]}, false}});
}

absl::Status BiasAddGradKernel::Forward(KernelContext* ctx) {
  ConstTensorView dy = ctx->input("dy").blob(0);
  TensorView out = ctx->output("out").blob(0);
  BiasAddGrad(Floats(dy), dy.shape()[0], dy.shape()[1], Floats(out));
  return absl::OkStatus();
}

// --- relu, relu_grad -----------------------------------------------------

absl::Status ReluKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ExpectNames(ctx, {"in"}, {"out"});
  if (!status.ok()) return status;
  const KernelIo* in = ctx.input("in");
  if (in->blobs.size() != 1 || in->blobs[0].data_type != DT_FLOAT32) {
    return absl::InvalidArgumentError(absl::StrCat(
        "consumed_regst_desc_id['in']: relu wants one float32 blob"));
  }
  BlobDesc out = in->blobs[0];
  out.name = "out";
  return ctx.SetOutputBlobs("out", {out});
}

absl::Status ReluKernel::Forward(KernelContext* ctx) {
  ConstTensorView in = ctx->input("in").blob(0);
  TensorView out = ctx->output("out").blob(0);
  absl::Status status = Shape(out, in.shape());
  if (!status.ok()) return status;
  Relu(Floats(in), in.elem_cnt(), Floats(out));
  return absl::OkStatus();
}

absl::Status ReluGradKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ExpectNames(ctx, {"dy", "y"}, {"out"});
  if (!status.ok()) return status;
  for (const char* name : {"dy", "y"}) {
    const KernelIo* io = ctx.input(name);
    if (io->blobs.size() != 1 || io->blobs[0].data_type != DT_FLOAT32) {
      return absl::InvalidArgumentError(
          absl::StrCat("consumed_regst_desc_id['", name,
                       "']: relu_grad wants one float32 blob"));
    }
  }
  const BlobDesc& dy = ctx.input("dy")->blobs[0];
  const BlobDesc& y = ctx.input("y")->blobs[0];
  if (dy.shape != y.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat("relu_grad: dy ", dy.ToString(), " and y ", y.ToString(),
                     " differ in shape"));
  }
  BlobDesc out = dy;
  out.name = "out";
  return ctx.SetOutputBlobs("out", {out});
}

absl::Status ReluGradKernel::Forward(KernelContext* ctx) {
  ConstTensorView dy = ctx->input("dy").blob(0);
  ConstTensorView y = ctx->input("y").blob(0);
  TensorView out = ctx->output("out").blob(0);
  absl::Status status = SameShape(dy, y);
  if (status.ok()) status = Shape(out, dy.shape());
  if (!status.ok()) return status;
  ReluGrad(Floats(dy), Floats(y), dy.elem_cnt(), Floats(out));
  return absl::OkStatus();
}

// --- softmax_xent, accuracy ----------------------------------------------

namespace {

// logits [n, classes] float32 and labels [n] int32 with the same n.
absl::Status ExpectLogitsAndLabels(const KernelInitContext& ctx) {
  auto logits = OneBlob(ctx, "logits", DT_FLOAT32, 2);
  if (!logits.ok()) return logits.status();
  auto labels = OneBlob(ctx, "labels", DT_INT32, 1);
  if (!labels.ok()) return labels.status();
  if (labels->shape[0] != logits->shape[0]) {
    return absl::InvalidArgumentError(absl::StrCat(
        OpType(ctx), ": labels ", labels->ToString(), " and logits ",
        logits->ToString(), " hold different numbers of rows"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status SameRows(ConstTensorView logits, ConstTensorView labels) {
  if (logits.shape()[0] == labels.shape()[0]) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("logits ", ShapeString(logits.shape()), " but labels ",
                   ShapeString(labels.shape()), " in this piece"));
}

absl::Status SoftmaxXentKernel::Init(const KernelInitContext& ctx) {
  absl::Status status =
      ExpectNames(ctx, {"labels", "logits"}, {"dlogits", "loss"});
  if (status.ok()) status = ExpectLogitsAndLabels(ctx);
  if (!status.ok()) return status;
  BlobDesc dlogits = ctx.input("logits")->blobs[0];
  dlogits.name = "dlogits";
  status = ctx.SetOutputBlobs("dlogits", {dlogits});
  if (!status.ok()) return status;
  return ctx.SetOutputBlobs("loss", {BlobDesc{"loss", DT_FLOAT64, {1}, false}});
}

absl::Status SoftmaxXentKernel::Forward(KernelContext* ctx) {
  ConstTensorView logits = ctx->input("logits").blob(0);
  ConstTensorView labels = ctx->input("labels").blob(0);
  TensorView dlogits = ctx->output("dlogits").blob(0);
  TensorView loss = ctx->output("loss").blob(0);
  absl::Status status = SameRows(logits, labels);
  if (status.ok()) status = Shape(dlogits, logits.shape());
  if (!status.ok()) return status;
  double sum = 0;
  status = SoftmaxCrossEntropy(
      Floats(logits), static_cast<const int32_t*>(labels.raw_data()),
      logits.shape()[0], logits.shape()[1], &sum, Floats(dlogits));
  if (!status.ok()) return status;
  *static_cast<double*>(loss.mutable_raw_data()) = sum;
  return absl::OkStatus();
}

absl::Status AccuracyKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ExpectNames(ctx, {"labels", "logits"}, {"out"});
  if (status.ok()) status = ExpectLogitsAndLabels(ctx);
  if (!status.ok()) return status;
  return ctx.SetOutputBlobs("out", {BlobDesc{"correct", DT_INT64, {1}, false}});
}

absl::Status AccuracyKernel::Forward(KernelContext* ctx) {
  ConstTensorView logits = ctx->input("logits").blob(0);
  ConstTensorView labels = ctx->input("labels").blob(0);
  absl::Status status = SameRows(logits, labels);
  if (!status.ok()) return status;
  *static_cast<int64_t*>(ctx->output("out").blob(0).mutable_raw_data()) =
      CountCorrect(Floats(logits),
                   static_cast<const int32_t*>(labels.raw_data()),
                   logits.shape()[0], logits.shape()[1]);
  return absl::OkStatus();
}

// --- sgd_momentum ----------------------------------------------------------

absl::Status SgdMomentumKernel::Init(const KernelInitContext& ctx) {
  absl::Status status =
      ExpectNames(ctx, {"batch", "grad"}, {"delta"}, {"batch", "grad"});
  if (!status.ok()) return status;
  auto lr = ctx.FloatAttr("lr");
  if (!lr.ok()) return lr.status();
  auto momentum = ctx.FloatAttrOr("momentum", 0.0);
  if (!momentum.ok()) return momentum.status();
  if (!(*lr > 0) || !(*momentum >= 0 && *momentum < 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr: lr must be > 0 and momentum in [0, 1), got lr ", *lr,
        " and momentum ", *momentum));
  }
  lr_ = *lr;
  momentum_ = *momentum;
  auto decay = ctx.FloatAttrOr("decay", 1.0);
  if (!decay.ok()) return decay.status();
  auto decay_steps = ctx.IntAttrOr("decay_steps", 0);
  if (!decay_steps.ok()) return decay_steps.status();
  if (!(*decay > 0 && *decay <= 1) || *decay_steps < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr: decay must be in (0, 1] and decay_steps >= 0, got ",
        *decay, " and ", *decay_steps));
  }
  decay_ = *decay;
  decay_steps_ = *decay_steps;
  int grads = 0, batches = 0;
  for (const KernelIo& io : ctx.inputs()) {
    grads += io.name == "grad";
    batches += io.name == "batch";
  }
  if (grads != batches) {
    return absl::InvalidArgumentError(absl::StrCat(
        "consumed_regst_desc_id: sgd_momentum takes one 'batch' per 'grad' "
        "(the samples behind it), got ",
        grads, " grad and ", batches, " batch"));
  }
  auto first =
      OneBlob(ctx, "grad", DT_FLOAT32,
              static_cast<int>(ctx.input("grad")->blobs.empty()
                                   ? 1
                                   : ctx.input("grad")->blobs[0].shape.size()));
  if (!first.ok()) return first.status();
  if (first->is_dynamic) {
    return absl::InvalidArgumentError(
        "consumed_regst_desc_id['grad']: a gradient has a static shape");
  }
  for (int i = 1; i < grads; ++i) {
    const KernelIo* io = ctx.input("grad", i);
    if (io->blobs.size() != 1 || io->blobs[0].data_type != DT_FLOAT32 ||
        io->blobs[0].shape != first->shape || io->blobs[0].is_dynamic) {
      return absl::InvalidArgumentError(absl::StrCat(
          "consumed_regst_desc_id['grad'] (regst_desc ", io->regst_desc_id,
          "): every gradient must be ", first->ToString()));
    }
  }
  for (int i = 0; i < batches; ++i) {
    const KernelIo* io = ctx.input("batch", i);
    if (io->blobs.empty() || io->blobs[0].shape.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "consumed_regst_desc_id['batch'] (regst_desc ", io->regst_desc_id,
          "): its first blob must have a leading (sample) dimension"));
    }
  }
  auto shard = ctx.IntAttrOr("shard", 0);
  if (!shard.ok()) return shard.status();
  auto shards = ctx.IntAttrOr("shards", 1);
  if (!shards.ok()) return shards.status();
  const int64_t n = first->elem_cnt();
  if (*shards < 1 || *shards > std::max<int64_t>(n, 1) || *shard < 0 ||
      *shard >= *shards) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr: shard must be in [0, shards) and shards in [1, ",
        std::max<int64_t>(n, 1), "] (the gradient's elements), got shard ",
        *shard, " of ", *shards));
  }
  begin_ = ShardBegin(n, *shards, *shard);
  end_ = ShardBegin(n, *shards, *shard + 1);
  velocity_.assign(end_ - begin_, 0.0f);
  BlobDesc delta = *first;
  delta.name = "delta";
  if (*shards > 1) delta.shape = {end_ - begin_};
  return ctx.SetOutputBlobs("delta", {delta});
}

absl::Status SgdMomentumKernel::Forward(KernelContext* ctx) {
  const int n = ctx->num_inputs("grad");
  std::vector<const float*> grads(n);
  for (int i = 0; i < n; ++i) {
    grads[i] = Floats(ctx->input("grad", i).blob(0)) + begin_;
  }
  const int64_t count = Samples(ctx);
  TensorView delta = ctx->output("delta").blob(0);
  SgdMomentum(grads, count, NextRate(count), momentum_, delta.elem_cnt(),
              velocity_.data(), Floats(delta));
  return absl::OkStatus();
}

int64_t SgdMomentumKernel::Samples(KernelContext* ctx) const {
  int64_t count = 0;
  for (int i = 0; i < ctx->num_inputs("batch"); ++i) {
    count += ctx->input("batch", i).blob(0).shape()[0];
  }
  return count;
}

double SgdMomentumKernel::NextRate(int64_t samples) {
  const double rate = ScheduledRate(lr_, decay_, decay_steps_, steps_);
  steps_ += samples > 0;
  return rate;
}

absl::Status SgdMomentumKernel::SaveState(const KernelStateContext&,
                                          KernelState* state) {
  state->AddValues<float>("velocity", velocity_);
  state->AddScalar<int64_t>("steps", steps_);
  return absl::OkStatus();
}

absl::Status SgdMomentumKernel::RestoreState(const KernelStateContext&,
                                             const KernelState& state) {
  absl::Status read = state.Read<float>("velocity", absl::MakeSpan(velocity_));
  if (!read.ok()) return read;
  auto steps = state.Scalar<int64_t>("steps");
  if (!steps.ok()) return steps.status();
  steps_ = *steps;
  return absl::OkStatus();
}

// --- variable --------------------------------------------------------------

absl::Status VariableKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ExpectNames(ctx, {"delta"}, {"out"}, {"delta"});
  if (!status.ok()) return status;
  auto init = ctx.StringAttrOr("init", "zeros");
  auto scale = ctx.FloatAttrOr("scale", 0.0);
  auto seed = ctx.IntAttrOr("seed", 0);
  if (!init.ok()) return init.status();
  if (!scale.ok()) return scale.status();
  if (!seed.ok()) return seed.status();
  init_ = *init;
  scale_ = *scale;
  seed_ = static_cast<uint64_t>(*seed);
  float probe = 0;
  status = InitWeights(init_, scale_, seed_, 0, &probe);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['init']: ", status.message()));
  }
  auto full_shape = ctx.IntListAttr("full_shape");
  if (!full_shape.ok()) return full_shape.status();
  auto offset = ctx.IntListAttr("offset");
  if (!offset.ok()) return offset.status();
  full_shape_ = *full_shape;
  offset_ = *offset;
  auto part = ParallelPartOf(ctx);
  if (!part.ok()) return part.status();
  // Split over devices, the whole array's shape given: this device's
  // window of it, as the compiler splits (actor/parallel_part.h).
  if (offset_.empty() && part->num > 1 &&
      part->axis < static_cast<int64_t>(full_shape_.size())) {
    offset_.assign(full_shape_.size(), 0);
    offset_[part->axis] = BalancedSplitter(full_shape_[part->axis], part->num)
                              .At(part->index)
                              .begin;
  }
  const KernelIo* delta = ctx.input("delta");
  const KernelIo* out = ctx.output("out");
  const std::vector<BlobDesc>& want =
      out->declared && !out->blobs.empty() ? out->blobs : delta->blobs;
  if (want.size() != 1 || want[0].data_type != DT_FLOAT32 ||
      want[0].is_dynamic) {
    return absl::InvalidArgumentError(
        "produced_regst_desc['out']: a variable holds one static float32 "
        "blob");
  }
  shape_ = want[0].shape;
  if (!full_shape_.empty() || !offset_.empty()) {
    if (offset_.empty()) offset_.assign(full_shape_.size(), 0);
    const std::vector<int64_t>& shape = want[0].shape;
    bool fits =
        full_shape_.size() == shape.size() && offset_.size() == shape.size();
    int64_t total = 1;
    for (size_t d = 0; fits && d < shape.size(); ++d) {
      fits = offset_[d] >= 0 && offset_[d] + shape[d] <= full_shape_[d] &&
             total <= (int64_t{1} << 62) / std::max<int64_t>(full_shape_[d], 1);
      total *= std::max<int64_t>(full_shape_[d], 1);
    }
    if (!fits) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel.attr['full_shape'], ['offset']: the variable ",
                       want[0].ToString(), " is no window of [",
                       absl::StrJoin(full_shape_, ", "), "] at [",
                       absl::StrJoin(offset_, ", "), "]"));
    }
  }
  int deltas = 0;
  for (const KernelIo& io : ctx.inputs()) deltas += io.name == "delta";
  if (deltas == 1) {
    if (delta->blobs.size() != 1 || delta->blobs[0].shape != want[0].shape ||
        delta->blobs[0].data_type != DT_FLOAT32 || delta->blobs[0].is_dynamic) {
      return absl::InvalidArgumentError(absl::StrCat(
          "consumed_regst_desc_id['delta'] (regst_desc ", delta->regst_desc_id,
          "): must be ", want[0].ToString(), " like the variable"));
    }
    return ctx.SetOutputBlobs("out", want);
  }
  if (!out->declared || out->blobs.empty()) {
    return absl::InvalidArgumentError(
        "produced_regst_desc['out']: state the variable's blob when its delta "
        "comes in shards");
  }
  int64_t covered = 0;
  for (int i = 0; i < deltas; ++i) {
    const KernelIo* io = ctx.input("delta", i);
    if (io->blobs.size() != 1 || io->blobs[0].data_type != DT_FLOAT32 ||
        io->blobs[0].is_dynamic) {
      return absl::InvalidArgumentError(absl::StrCat(
          "consumed_regst_desc_id['delta'] (regst_desc ", io->regst_desc_id,
          "): a delta shard is one static float32 blob"));
    }
    covered += io->blobs[0].elem_cnt();
  }
  if (covered != want[0].elem_cnt()) {
    return absl::InvalidArgumentError(
        absl::StrCat("consumed_regst_desc_id['delta']: the ", deltas,
                     " delta shards hold ", covered, " elements; the variable ",
                     want[0].ToString(), " has ", want[0].elem_cnt()));
  }
  return ctx.SetOutputBlobs("out", want);
}

absl::Status VariableKernel::InitialOutput(KernelContext* ctx) {
  TensorView out = ctx->output("out").blob(0);
  float* to = Floats(out);
  if (last_ == nullptr) {
    absl::Status status = FillInitial(out.shape(), to);
    if (!status.ok()) return status;
  } else if (last_ != to) {
    std::memcpy(to, last_, out.byte_size());
  }
  last_ = to;
  return absl::OkStatus();
}

absl::Status VariableKernel::FillInitial(absl::Span<const int64_t> shape,
                                         float* to) const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  if (full_shape_.empty()) return InitWeights(init_, scale_, seed_, n, to);
  return InitWeightsWindow(init_, scale_, seed_, full_shape_, offset_,
                           std::vector<int64_t>(shape.begin(), shape.end()),
                           to);
}

absl::Status VariableKernel::AddDelta(KernelContext*, const float* from,
                                      const float* delta, int64_t n,
                                      float* to) {
  ApplyDelta(from, delta, n, to);
  return absl::OkStatus();
}

absl::Status VariableKernel::Forward(KernelContext* ctx) {
  TensorView out = ctx->output("out").blob(0);
  float* to = Floats(out);
  if (last_ == nullptr) {
    // Not in a cycle: the first act starts from the initial values.
    absl::Status status = StartOutput(ctx);
    if (!status.ok()) return status;
  }
  int64_t offset = 0;
  for (int i = 0; i < ctx->num_inputs("delta"); ++i) {
    ConstTensorView delta = ctx->input("delta", i).blob(0);
    absl::Status status = AddDelta(ctx, last_ + offset, Floats(delta),
                                   delta.elem_cnt(), to + offset);
    if (!status.ok()) return status;
    offset += delta.elem_cnt();
  }
  last_ = to;
  return absl::OkStatus();
}

absl::Status VariableKernel::SaveState(const KernelStateContext&,
                                       KernelState* state) {
  const int64_t n = ShapeElemCnt(shape_);
  if (last_ != nullptr) {
    state->AddValues<float>("value", absl::MakeConstSpan(last_, n), shape_);
    return absl::OkStatus();
  }
  std::vector<float> initial(n);
  absl::Status status = FillInitial(shape_, initial.data());
  if (!status.ok()) return status;
  state->AddValues<float>("value", initial, shape_);
  return absl::OkStatus();
}

absl::Status VariableKernel::RestoreState(const KernelStateContext&,
                                          const KernelState& state) {
  restored_.resize(ShapeElemCnt(shape_));
  absl::Status read = state.Read<float>("value", absl::MakeSpan(restored_));
  if (!read.ok()) return read;
  last_ = restored_.data();
  return absl::OkStatus();
}

ACTORFLOW_REGISTER_KERNEL("matmul", MatMulKernel);
ACTORFLOW_REGISTER_KERNEL("bias_add", BiasAddKernel);
ACTORFLOW_REGISTER_KERNEL("bias_add_grad", BiasAddGradKernel);
ACTORFLOW_REGISTER_KERNEL("relu", ReluKernel);
ACTORFLOW_REGISTER_KERNEL("relu_grad", ReluGradKernel);
ACTORFLOW_REGISTER_KERNEL("softmax_xent", SoftmaxXentKernel);
ACTORFLOW_REGISTER_KERNEL("accuracy", AccuracyKernel);
ACTORFLOW_REGISTER_KERNEL("sgd_momentum", SgdMomentumKernel);
ACTORFLOW_REGISTER_KERNEL("variable", VariableKernel);

}  // namespace actorflow::internal::nn
