#include "compiler/signature_rules.h"

#include <functional>

namespace actorflow::internal {
namespace {

using Given = std::map<std::string, Signature>;
using Rule =
    std::function<std::optional<OpSignatures>(const OpConf&, const Given&)>;

const Signature kRows = Signature::Split(0);
const Signature kWhole = Signature::Whole();
const Signature kPartial = {Signature::kPartialSum, 0};

bool BoolAttr(const OpConf& conf, const std::string& key) {
  auto it = conf.attr().find(key);
  return it != conf.attr().end() && it->second.b();
}

Signature Of(const Given& given, const std::string& key) {
  auto it = given.find(key);
  return it == given.end() ? kWhole : it->second;
}

// a [m, k] times b [k, n] (either transposed by attr). Rows of a split give
// rows of the product; a^T b over rows split is a sum over the parts; a
// whole times b's columns split gives the product's columns. Tensor
// parallel (a split by its columns, as a column-split layer leaves its
// activations): split along the contracted axis on both sides, the
// product is a sum over the parts; a^T, split by its rows, times b whole
// gives the product's rows.
std::optional<OpSignatures> MatMul(const OpConf& conf, const Given& given) {
  const bool ta = BoolAttr(conf, "transpose_a");
  const bool tb = BoolAttr(conf, "transpose_b");
  const Signature a = Of(given, "a");
  const Signature b = Of(given, "b");
  const Signature b_columns = Signature::Split(tb ? 0 : 1);
  const Signature b_contracted = Signature::Split(tb ? 1 : 0);
  const Signature a_columns = Signature::Split(1);
  if (a == kRows) {
    if (ta)
      return OpSignatures{{{"a", kRows}, {"b", kRows}}, {{"out", kPartial}}};
    return OpSignatures{{{"a", kRows}, {"b", kWhole}}, {{"out", kRows}}};
  }
  if (a == kWhole && b == b_columns) {
    return OpSignatures{{{"a", kWhole}, {"b", b}},
                        {{"out", Signature::Split(1)}}};
  }
  if (a == a_columns && !ta && b == b_contracted) {
    return OpSignatures{{{"a", a}, {"b", b}}, {{"out", kPartial}}};
  }
  if (a == a_columns && ta) {
    return OpSignatures{{{"a", a}, {"b", kWhole}}, {{"out", kRows}}};
  }
  return std::nullopt;
}

// x [rows, units] plus bias [units]: rows split need the whole bias; units
// split need the bias split alike.
std::optional<OpSignatures> BiasAdd(const OpConf&, const Given& given) {
  const Signature x = Of(given, "x");
  if (x == kRows)
    return OpSignatures{{{"x", kRows}, {"bias", kWhole}}, {{"out", kRows}}};
  if (x == Signature::Split(1)) {
    return OpSignatures{{{"x", x}, {"bias", kRows}}, {{"out", x}}};
  }
  return std::nullopt;
}

// The bias's gradient sums dy over rows.
std::optional<OpSignatures> BiasAddGrad(const OpConf&, const Given& given) {
  const Signature dy = Of(given, "dy");
  if (dy == kRows) return OpSignatures{{{"dy", kRows}}, {{"out", kPartial}}};
  if (dy == Signature::Split(1)) {
    return OpSignatures{{{"dy", dy}}, {{"out", kRows}}};
  }
  return std::nullopt;
}

// Per-row losses and gradients need whole rows of logits; the loss and the
// count of right answers are sums over rows.
std::optional<OpSignatures> PerRowSums(const OpConf& conf, const Given&) {
  OpSignatures s{{{"logits", kRows}, {"labels", kRows}}, {}};
  if (conf.op_type() == "softmax_xent") {
    s.outputs = {{"loss", kPartial}, {"dlogits", kRows}};
  } else {
    s.outputs = {{"out", kPartial}};
  }
  return s;
}

// Every copy of a parameter takes the same whole step: its optimizer reads
// the whole gradient (partial sums summed first) and the whole batch.
std::optional<OpSignatures> Whole(const OpConf& conf, const Given& given) {
  OpSignatures s;
  for (const auto& [key, sig] : given) s.inputs[key] = kWhole;
  s.outputs = {{conf.op_type() == "sgd_momentum" ? "delta" : "out", kWhole}};
  return s;
}

// Element-wise operators that are not linear cannot act on partial sums:
// those are summed (and split by rows) first.
std::optional<OpSignatures> NotOnPartialSums(const OpConf&,
                                             const Given& given) {
  bool partial = false;
  for (const auto& [key, sig] : given) partial |= sig == kPartial;
  if (!partial) return std::nullopt;
  OpSignatures s;
  for (const auto& [key, sig] : given) s.inputs[key] = kRows;
  s.outputs = {{"out", kRows}};
  return s;
}

// Kernels that pick or join entries by their position along one axis
// (head: dimension 0; slice, concat: attr `axis`) give each device's part a
// different meaning than the whole's when the input is split along that
// axis: the parts' first rows are not the whole's. Such an input is read
// whole, and every device makes the whole output. Along any other axis (or
// on partial sums) the generic default is right.
std::optional<OpSignatures> Positional(const OpConf& conf, const Given& given) {
  int64_t axis = 0;
  if (conf.op_type() != "head") {
    auto it = conf.attr().find("axis");
    if (it == conf.attr().end()) return std::nullopt;
    axis = it->second.i();
  }
  if (Of(given, "in") != Signature::Split(static_cast<int>(axis))) {
    return std::nullopt;
  }
  return OpSignatures{{{"in", kWhole}}, {{"out", kWhole}}};
}

const std::map<std::string, Rule>& Rules() {
  static const auto* rules = new std::map<std::string, Rule>{
      {"matmul", MatMul},
      {"bias_add", BiasAdd},
      {"bias_add_grad", BiasAddGrad},
      {"softmax_xent", PerRowSums},
      {"accuracy", PerRowSums},
      {"sgd_momentum", Whole},
      {"variable", Whole},
      {"relu", NotOnPartialSums},
      {"relu_grad", NotOnPartialSums},
      {"head", Positional},
      {"slice", Positional},
      {"concat", Positional},
  };
  return *rules;
}

}  // namespace

std::optional<OpSignatures> InferSignatures(const OpConf& conf,
                                            const Given& given) {
  auto it = Rules().find(conf.op_type());
  if (it == Rules().end()) return std::nullopt;
  return it->second(conf, given);
}

}  // namespace actorflow::internal
