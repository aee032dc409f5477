// The dense-layer arithmetic against hand-worked values, naive loops and
// finite differences; the kernels' checks of their plans.
#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "actorflow/plan_validator.h"
#include "nn/dense_math.h"
#include "plan/plan_builder.h"
#include "plan/plan_writer.h"
#include "tests/cli_util.h"
#include "tests/test_util.h"

namespace actorflow::internal::nn {
namespace {

std::vector<float> Random(int64_t n, std::mt19937_64* rng) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = unit(*rng);
  return v;
}

TEST_CASE("matmul agrees with a naive loop in every transpose", "[nn]") {
  const uint64_t seed = testing::TestSeed("matmul");
  std::mt19937_64 rng(seed);
  const int64_t m = 37, k = 53, n = 29;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      INFO("seed " << seed << " ta " << ta << " tb " << tb);
      // a is [m, k] logically, stored transposed when ta.
      std::vector<float> a = Random(m * k, &rng), b = Random(k * n, &rng);
      auto at = [&](int64_t i, int64_t j) {
        return ta ? a[j * m + i] : a[i * k + j];
      };
      auto bt = [&](int64_t i, int64_t j) {
        return tb ? b[j * k + i] : b[i * n + j];
      };
      std::vector<float> out(m * n);
      MatMul(a.data(), ta ? k : m, ta ? m : k, ta, b.data(), tb ? n : k,
             tb ? k : n, tb, out.data());
      double worst = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t p = 0; p < k; ++p) want += double(at(i, p)) * bt(p, j);
          worst = std::max(worst, std::abs(want - out[i * n + j]));
        }
      }
      CHECK(worst < 1e-4);
    }
  }
}

TEST_CASE("an empty inner dimension gives zeros", "[nn]") {
  std::vector<float> out(6, 7.0f);
  MatMul(nullptr, 0, 2, true, nullptr, 0, 3, false, out.data());
  CHECK(out == std::vector<float>(6, 0.0f));
}

TEST_CASE("bias, relu and their gradients by hand", "[nn]") {
  const std::vector<float> x = {1, -2, 3, -4, 5, -6};  // [2, 3]
  const std::vector<float> bias = {0.5f, 1.5f, -3.0f};
  std::vector<float> y(6), db(3), r(6), dr(6);
  BiasAdd(x.data(), bias.data(), 2, 3, y.data());
  CHECK(y == std::vector<float>{1.5f, -0.5f, 0, -3.5f, 6.5f, -9});
  BiasAddGrad(x.data(), 2, 3, db.data());
  CHECK(db == std::vector<float>{-3, 3, -3});
  Relu(y.data(), 6, r.data());
  CHECK(r == std::vector<float>{1.5f, 0, 0, 0, 6.5f, 0});
  ReluGrad(x.data(), r.data(), 6, dr.data());
  CHECK(dr == std::vector<float>{1, 0, 0, 0, 5, 0});
}

TEST_CASE("softmax cross-entropy: values, gradient, bad labels", "[nn]") {
  // softmax([0, ln 2]) = [1/3, 2/3].
  const std::vector<float> logits = {0.0f, std::log(2.0f), 0.0f,
                                     std::log(2.0f)};
  const std::vector<int32_t> labels = {1, 0};
  std::vector<float> d(4);
  double loss = 0;
  REQUIRE(
      SoftmaxCrossEntropy(logits.data(), labels.data(), 2, 2, &loss, d.data())
          .ok());
  CHECK(loss == Approx(-std::log(2.0 / 3) - std::log(1.0 / 3)));
  CHECK(d[0] == Approx(1.0 / 3));
  CHECK(d[1] == Approx(2.0 / 3 - 1));
  CHECK(d[2] == Approx(1.0 / 3 - 1));
  CHECK(d[3] == Approx(2.0 / 3));
  CHECK(CountCorrect(logits.data(), labels.data(), 2, 2) == 1);

  const std::vector<int32_t> bad = {1, 2};
  absl::Status status =
      SoftmaxCrossEntropy(logits.data(), bad.data(), 2, 2, &loss, d.data());
  CHECK(status.message() == "label 2 of row 1 is outside [0, 2)");
}

// Loss of a one-hidden-layer net through the same functions.
double NetLoss(const std::vector<float>& x, const std::vector<int32_t>& y,
               const std::vector<float>& w1, const std::vector<float>& w2,
               int64_t n, int64_t in, int64_t hidden, int64_t classes) {
  std::vector<float> h(n * hidden), r(n * hidden), z(n * classes),
      d(n * classes);
  MatMul(x.data(), n, in, false, w1.data(), in, hidden, false, h.data());
  Relu(h.data(), n * hidden, r.data());
  MatMul(r.data(), n, hidden, false, w2.data(), hidden, classes, false,
         z.data());
  double loss = 0;
  REQUIRE(SoftmaxCrossEntropy(z.data(), y.data(), n, classes, &loss, d.data())
              .ok());
  return loss;
}

TEST_CASE("the backward pass matches finite differences", "[nn]") {
  const uint64_t seed = testing::TestSeed("backward");
  INFO("seed " << seed);
  std::mt19937_64 rng(seed);
  const int64_t n = 5, in = 7, hidden = 6, classes = 4;
  std::vector<float> x = Random(n * in, &rng), w1 = Random(in * hidden, &rng),
                     w2 = Random(hidden * classes, &rng);
  std::vector<int32_t> y = {0, 3, 1, 2, 3};
  // Forward and backward as the plan's tasks do.
  std::vector<float> h(n * hidden), r(n * hidden), z(n * classes),
      d(n * classes), dw2(hidden * classes), dr(n * hidden), dh(n * hidden),
      dw1(in * hidden);
  MatMul(x.data(), n, in, false, w1.data(), in, hidden, false, h.data());
  Relu(h.data(), n * hidden, r.data());
  MatMul(r.data(), n, hidden, false, w2.data(), hidden, classes, false,
         z.data());
  double loss = 0;
  REQUIRE(SoftmaxCrossEntropy(z.data(), y.data(), n, classes, &loss, d.data())
              .ok());
  MatMul(r.data(), n, hidden, true, d.data(), n, classes, false, dw2.data());
  MatMul(d.data(), n, classes, false, w2.data(), hidden, classes, true,
         dr.data());
  ReluGrad(dr.data(), r.data(), n * hidden, dh.data());
  MatMul(x.data(), n, in, true, dh.data(), n, hidden, false, dw1.data());
  const double eps = 1e-3;
  // A central difference is the derivative only where the loss is smooth
  // over [w - eps, w + eps]: moving w1[k][j] moves every h[s][j] by
  // x[s][k] * eps, and an h that crosses 0 crosses the ReLU's kink. Such
  // coordinates are skipped; enough others remain to check.
  auto crosses_kink = [&](int64_t i) {
    const int64_t k = i / hidden, j = i % hidden;
    for (int64_t s = 0; s < n; ++s) {
      if (std::abs(h[s * hidden + j]) <= std::abs(x[s * in + k]) * eps * 2) {
        return true;
      }
    }
    return false;
  };
  int checked = 0;
  for (int64_t i = 0; i < in * hidden; i += 5) {
    if (crosses_kink(i)) continue;
    ++checked;
    std::vector<float> plus = w1, minus = w1;
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric = (NetLoss(x, y, plus, w2, n, in, hidden, classes) -
                            NetLoss(x, y, minus, w2, n, in, hidden, classes)) /
                           (2 * eps);
    CHECK(dw1[i] == Approx(numeric).margin(2e-3));
  }
  CHECK(checked >= 6);
  for (int64_t i = 0; i < hidden * classes; i += 3) {
    std::vector<float> plus = w2, minus = w2;
    plus[i] += eps;
    minus[i] -= eps;
    const double numeric = (NetLoss(x, y, w1, plus, n, in, hidden, classes) -
                            NetLoss(x, y, w1, minus, n, in, hidden, classes)) /
                           (2 * eps);
    CHECK(dw2[i] == Approx(numeric).margin(2e-3));
  }
}

TEST_CASE("sgd with momentum, its schedule and empty steps", "[nn]") {
  const std::vector<float> g0 = {2, -4}, g1 = {6, 0};
  std::vector<float> v = {0, 0}, delta(2);
  // g = (2 + 6, -4 + 0) / 4 = (2, -1); v = g; delta = -0.5 * v.
  SgdMomentum({g0.data(), g1.data()}, 4, 0.5, 0.9, 2, v.data(), delta.data());
  CHECK(v == std::vector<float>{2, -1});
  CHECK(delta == std::vector<float>{-1, 0.5f});
  // v = 0.9 v + g = (3.8, -1.9).
  SgdMomentum({g0.data(), g1.data()}, 4, 0.5, 0.9, 2, v.data(), delta.data());
  CHECK(v[0] == Approx(3.8));
  CHECK(delta[1] == Approx(0.95));
  // No sample: no step, and the velocity waits.
  const std::vector<float> before = v;
  SgdMomentum({g0.data()}, 0, 0.5, 0.9, 2, v.data(), delta.data());
  CHECK(delta == std::vector<float>{0, 0});
  CHECK(v == before);
  CHECK(ScheduledRate(0.1, 0.5, 10, 9) == 0.1);
  CHECK(ScheduledRate(0.1, 0.5, 10, 10) == 0.05);
  CHECK(ScheduledRate(0.1, 0.5, 10, 25) == 0.025);
  CHECK(ScheduledRate(0.1, 0.5, 0, 25) == 0.1);
  std::vector<float> w = {1, 2};
  ApplyDelta(w.data(), delta.data(), 2, w.data());
  CHECK(w == std::vector<float>{1, 2});
}

TEST_CASE("sgd and apply agree with scalar loops at any length and count",
          "[nn]") {
  // The vectorized passes (one, two, three or more gradients) against the
  // documented arithmetic, element by element, with lengths that leave
  // remainders.
  const uint64_t seed = testing::TestSeed("sgd_lengths");
  std::mt19937_64 rng(seed);
  for (int64_t n : {1, 7, 37, 1029}) {
    for (int terms = 1; terms <= 4; ++terms) {
      std::vector<std::vector<float>> grads;
      std::vector<const float*> pointers;
      for (int k = 0; k < terms; ++k) {
        grads.push_back(Random(n, &rng));
        pointers.push_back(grads.back().data());
      }
      std::vector<float> v = Random(n, &rng), delta(n);
      std::vector<float> want_v = v, want_delta(n);
      const float mu = 0.9f, inv = static_cast<float>(1.0 / 6), step = -0.05f;
      for (int64_t i = 0; i < n; ++i) {
        float g = grads[0][i];
        for (int k = 1; k < terms; ++k) g += grads[k][i];
        want_v[i] = mu * want_v[i] + g * inv;
        want_delta[i] = step * want_v[i];
      }
      SgdMomentum(pointers, 6, 0.05, 0.9, n, v.data(), delta.data());
      INFO("n " << n << ", " << terms << " gradient(s)");
      CHECK(v == want_v);
      CHECK(delta == want_delta);
      std::vector<float> w = Random(n, &rng), out(n), want(n);
      for (int64_t i = 0; i < n; ++i) want[i] = w[i] + delta[i];
      ApplyDelta(w.data(), delta.data(), n, out.data());
      CHECK(out == want);
      ApplyDelta(w.data(), delta.data(), n, w.data());
      CHECK(w == want);
    }
  }
}

// Every vector level this CPU runs, lowest first.
std::vector<Isa> SupportedLevels() {
  std::vector<Isa> levels;
  for (Isa isa : {Isa::kBaseline, Isa::kAvx2, Isa::kAvx512}) {
    if (static_cast<int>(isa) <= static_cast<int>(BestSupportedIsa())) {
      levels.push_back(isa);
    }
  }
  return levels;
}

TEST_CASE("every vector level computes the same arithmetic", "[nn]") {
  // Products may round differently per level (FMA, other blocking): within
  // k * 1e-6 (relative) of the double-precision sum of k terms. The elementwise
  // kernels are built without contraction, so they are bit-identical across
  // levels.
  const uint64_t seed = testing::TestSeed("dense_levels");
  INFO("seed " << seed << "; levels up to " << IsaName(BestSupportedIsa())
               << ", this process computes at " << IsaName(DenseIsa()));
  std::mt19937_64 rng(seed);
  const DenseKernels& base = DenseKernelsFor(Isa::kBaseline);
  for (Isa isa : SupportedLevels()) {
    INFO("level " << IsaName(isa));
    const DenseKernels& level = DenseKernelsFor(isa);
    for (auto [m, k, n] : {std::tuple{1, 1, 1}, std::tuple{32, 784, 128},
                           std::tuple{64, 10, 256}, std::tuple{67, 129, 31}}) {
      std::vector<float> a = Random(m * k, &rng), b = Random(k * n, &rng);
      std::vector<float> out(m * n);
      level.mat_mul(a.data(), m, k, false, b.data(), k, n, false, out.data());
      double worst = 0;
      for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
          double want = 0;
          for (int64_t p = 0; p < k; ++p) {
            want += double(a[i * k + p]) * b[p * n + j];
          }
          worst = std::max(
              worst, std::abs(want - out[i * n + j]) / (1 + std::abs(want)));
        }
      }
      INFO(m << "x" << k << " by " << k << "x" << n);
      CHECK(worst < 1e-6 * k);
    }
    const int64_t rows = 13, cols = 37, n = rows * cols;
    std::vector<float> x = Random(n, &rng), y = Random(n, &rng),
                       bias = Random(cols, &rng), g0 = Random(n, &rng),
                       g1 = Random(n, &rng), v0 = Random(n, &rng);
    for (int terms = 1; terms <= 3; ++terms) {
      const float* grads[] = {g0.data(), g1.data(), g0.data()};
      std::vector<float> v = v0, d(n), want_v = v0, want_d(n);
      level.sgd_momentum(grads, terms, 1.0f / 6, 0.9f, -0.05f, n, v.data(),
                         d.data());
      base.sgd_momentum(grads, terms, 1.0f / 6, 0.9f, -0.05f, n, want_v.data(),
                        want_d.data());
      CHECK(v == want_v);
      CHECK(d == want_d);
    }
    std::vector<float> got(n), want(n);
    level.bias_add(x.data(), bias.data(), rows, cols, got.data());
    base.bias_add(x.data(), bias.data(), rows, cols, want.data());
    CHECK(got == want);
    level.bias_add_grad(x.data(), rows, cols, got.data());
    base.bias_add_grad(x.data(), rows, cols, want.data());
    CHECK(got == want);
    level.relu_grad(x.data(), y.data(), n, got.data());
    base.relu_grad(x.data(), y.data(), n, want.data());
    CHECK(got == want);
    level.apply_delta(x.data(), y.data(), n, got.data());
    base.apply_delta(x.data(), y.data(), n, want.data());
    CHECK(got == want);
  }
}

TEST_CASE("ACTORFLOW_ISA names a level, or is refused", "[nn]") {
  CHECK(*ParseIsa("avx2") == Isa::kAvx2);
  CHECK(ParseIsa("sse9").status().message() ==
        "unknown instruction set 'sse9' (baseline, avx2 or avx512)");
  ::setenv("ACTORFLOW_ISA", "baseline", 1);
  CHECK(*IsaFromEnvironment() == Isa::kBaseline);
  ::setenv("ACTORFLOW_ISA", "auto", 1);
  CHECK(*IsaFromEnvironment() == BestSupportedIsa());
  ::setenv("ACTORFLOW_ISA", "sse9", 1);
  CHECK(IsaFromEnvironment().status().message() ==
        "ACTORFLOW_ISA=sse9: unknown instruction set 'sse9' (baseline, avx2 "
        "or avx512)");
  if (BestSupportedIsa() != Isa::kAvx512) {
    ::setenv("ACTORFLOW_ISA", "avx512", 1);
    CHECK(!IsaFromEnvironment().ok());
  }
  ::unsetenv("ACTORFLOW_ISA");
}

TEST_CASE("a window of the initial weights is that part of the whole", "[nn]") {
  std::vector<float> whole(6 * 5), window(3 * 2);
  REQUIRE(InitWeights("uniform", 0.5, 9, 30, whole.data()).ok());
  REQUIRE(InitWeightsWindow("uniform", 0.5, 9, {6, 5}, {2, 3}, {3, 2},
                            window.data())
              .ok());
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 2; ++c) {
      CHECK(window[r * 2 + c] == whole[(2 + r) * 5 + 3 + c]);
    }
  }
  CHECK(InitWeightsWindow("uniform", 0.5, 9, {6, 5}, {4, 3}, {3, 2},
                          window.data())
            .message() ==
        "dimension 0: a window of 3 at 4 leaves the array's 6");
  // A window of an enormous array costs only the window.
  const int64_t huge = int64_t{1} << 30;
  REQUIRE(InitWeightsWindow("uniform", 0.5, 9, {huge, huge}, {huge - 3, 7},
                            {3, 2}, window.data())
              .ok());
  for (float v : window) CHECK((v >= -0.5f && v < 0.5f));
  CHECK(InitWeightsWindow("uniform", 0.5, 9, {huge, huge, huge}, {0, 0, 0},
                          {1, 1, 1}, window.data())
            .message() == "the array has more than 2^62 elements");
}

TEST_CASE("initial weights are seeded and bounded", "[nn]") {
  std::vector<float> a(1000), b(1000), c(1000);
  REQUIRE(InitWeights("uniform", 0.5, 3, 1000, a.data()).ok());
  REQUIRE(InitWeights("uniform", 0.5, 3, 1000, b.data()).ok());
  REQUIRE(InitWeights("uniform", 0.5, 4, 1000, c.data()).ok());
  CHECK(a == b);
  CHECK(a != c);
  double sum = 0;
  for (float x : a) {
    CHECK((x >= -0.5f && x < 0.5f));
    sum += x;
  }
  CHECK(std::abs(sum / 1000) < 0.05);
  CHECK(InitWeights("normal", 1, 0, 4, a.data()).message() ==
        "init 'normal' (zeros or uniform)");
}

// One task of `op` fed by feeds of the given blobs; its problems.
std::string Check(const std::string& op,
                  std::vector<std::pair<std::string, BlobDescProto>> inputs,
                  std::vector<std::string> outputs,
                  std::map<std::string, AttrValue> attrs = {},
                  std::map<std::string, BlobDescProto> declared = {}) {
  PlanWriter w;
  std::vector<int64_t> ids;
  for (auto& [name, blob] : inputs) {
    ids.push_back(
        w.AddOutput(w.AddTask("feed_" + name + std::to_string(ids.size()),
                              "feed", CpuStream(0)),
                    "out", 1, false, {blob}));
  }
  TaskProto* task = w.AddTask("k", op, CpuStream(0));
  for (const auto& [key, value] : attrs) {
    (*task->mutable_kernel()->mutable_attr())[key] = value;
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    w.Consume(task, inputs[i].first, ids[i]);
  }
  for (const std::string& out : outputs) {
    w.Consume(w.AddTask("fetch_" + out, "fetch", CpuStream(0)), "in",
              declared.count(out)
                  ? w.AddOutput(task, out, 1, false, {declared[out]})
                  : w.AddOutput(task, out, 1, false));
  }
  return absl::StrJoin(ValidatePlan(w.plan()), "\n");
}

TEST_CASE("kernels check their plans and name the field", "[nn]") {
  const auto f32 = [](std::vector<int64_t> shape, bool dynamic = false) {
    return BlobProto("t", DT_FLOAT32, std::move(shape), dynamic);
  };
  CHECK(Check("matmul", {{"a", f32({8, 3}, true)}, {"b", f32({3, 4})}},
              {"out"}) == "");
  CHECK(testing::Contains(
      Check("matmul", {{"a", f32({8, 3})}, {"b", f32({5, 4})}}, {"out"}),
      "task 'k' (task_id 3): matmul: inner sizes differ: a [8, 3] and b "
      "[5, 4]"));
  CHECK(testing::Contains(
      Check("matmul", {{"a", f32({8, 3})}}, {"out"}),
      "consumed_regst_desc_id['b']: missing (matmul consumes a, b)"));
  CHECK(testing::Contains(
      Check("bias_add", {{"x", f32({8, 3})}, {"bias", f32({4})}}, {"out"}),
      "bias_add: bias t: float32 [4] must be static [3]"));
  CHECK(testing::Contains(
      Check("softmax_xent", {{"logits", f32({8, 3})}, {"labels", f32({8})}},
            {"loss", "dlogits"}),
      "consumed_regst_desc_id['labels'] (regst_desc 201): softmax_xent wants "
      "one int32 blob of rank 1"));
  CHECK(testing::Contains(
      Check("sgd_momentum", {{"grad", f32({3})}, {"batch", f32({8, 3})}},
            {"delta"}),
      "kernel.attr['lr']"));
  CHECK(Check("sgd_momentum", {{"grad", f32({3})}, {"batch", f32({8, 3})}},
              {"delta"}, {{"lr", FloatAttr(0.1)}}) == "");
  CHECK(testing::Contains(
      Check("sgd_momentum", {{"grad", f32({3})}, {"batch", f32({8, 3})}},
            {"delta"}, {{"lr", FloatAttr(0.1)}, {"momentum", FloatAttr(1)}}),
      "lr must be > 0 and momentum in [0, 1)"));
  // Sharded optimizers: the slice of shard 1 of 2 of a [5] gradient is
  // elements [2, 5); shards beyond the elements are refused.
  CHECK(Check("sgd_momentum", {{"grad", f32({5})}, {"batch", f32({8, 3})}},
              {"delta"},
              {{"lr", FloatAttr(0.1)},
               {"shard", IntAttr(1)},
               {"shards", IntAttr(2)}}) == "");
  CHECK(testing::Contains(
      Check("sgd_momentum", {{"grad", f32({5})}, {"batch", f32({8, 3})}},
            {"delta"},
            {{"lr", FloatAttr(0.1)},
             {"shard", IntAttr(2)},
             {"shards", IntAttr(2)}}),
      "kernel.attr: shard must be in [0, shards) and shards in [1, 5] (the "
      "gradient's elements), got shard 2 of 2"));
  CHECK(testing::Contains(
      Check("sgd_momentum", {{"grad", f32({5})}, {"batch", f32({8, 3})}},
            {"delta"},
            {{"lr", FloatAttr(0.1)},
             {"shard", IntAttr(0)},
             {"shards", IntAttr(6)}}),
      "got shard 0 of 6"));
  // A variable fed by delta shards: they must cover its elements.
  CHECK(Check("variable", {{"delta", f32({2})}, {"delta", f32({4})}}, {"out"},
              {}, {{"out", f32({2, 3})}}) == "");
  CHECK(testing::Contains(
      Check("variable", {{"delta", f32({2})}, {"delta", f32({3, 4})}}, {"out"},
            {}, {{"out", f32({2, 3})}}),
      "consumed_regst_desc_id['delta']: the 2 delta shards hold 14 "
      "elements; the variable t: float32 [2, 3] has 6"));
  CHECK(testing::Contains(
      Check("variable", {{"delta", f32({2})}, {"delta", f32({4})}}, {"out"}),
      "produced_regst_desc['out']: state the variable's blob when its delta "
      "comes in shards"));
  CHECK(
      testing::Contains(Check("variable", {{"delta", f32({3})}}, {"out"},
                              {{"init", StringAttr("ones")}}),
                        "kernel.attr['init']: init 'ones' (zeros or uniform)"));
}

}  // namespace
}  // namespace actorflow::internal::nn
