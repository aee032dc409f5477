// The dense-layer kernels on a GPU stream against the CPU arithmetic
// (dense_math.h), and the MLP plan with its towers on GPU streams against
// the sequential loop. The GPU sums in its own order, so agreement is
// within float rounding. Prints SKIPPED where no GPU is usable (CI runs it
// on the emulated device).
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <random>
#include <vector>

#include "actorflow/checkpoint.h"
#include "actorflow/cuda_api.h"
#include "examples/mnist_mlp/mnist_training.h"
#include "nn/dense_math.h"
#include "nn/gpu/dense_launch.h"
#include "tests/gpu_test_util.h"
#include "tests/test_util.h"

namespace actorflow::internal::nn {
namespace {

// Device memory and a stream for one test; copies block.
class Device {
 public:
  Device() {
    auto stream = cuda::StreamCreate(0);
    REQUIRE(stream.ok());
    stream_ = *stream;
  }
  ~Device() {
    for (void* p : buffers_) cuda::DeviceFree(0, p);
    cuda::StreamDestroy(0, stream_);
  }
  template <typename T>
  T* Up(const std::vector<T>& host) {
    T* device = Alloc<T>(host.size());
    REQUIRE(
        cuda::MemcpyAsync(device, host.data(), host.size() * sizeof(T), stream_)
            .ok());
    Sync();
    return device;
  }
  template <typename T>
  T* Alloc(size_t n) {
    auto memory = cuda::DeviceMalloc(0, n == 0 ? 1 : n * sizeof(T));
    REQUIRE(memory.ok());
    buffers_.push_back(*memory);
    return static_cast<T*>(*memory);
  }
  template <typename T>
  std::vector<T> Down(const T* device, size_t n) {
    Sync();
    std::vector<T> host(n);
    if (n == 0) return host;
    REQUIRE(
        cuda::MemcpyAsync(host.data(), device, n * sizeof(T), stream_).ok());
    Sync();
    return host;
  }
  void Sync() {
    REQUIRE(cuda::LastLaunchError("test launch").ok());
    REQUIRE(cuda::StreamSynchronize(0, stream_).ok());
  }
  void* stream() const { return stream_; }

 private:
  cuda::StreamHandle stream_ = nullptr;
  std::vector<void*> buffers_;
};

std::vector<float> Random(int64_t n, std::mt19937_64* rng) {
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::vector<float> v(n);
  for (float& x : v) x = unit(*rng);
  return v;
}

void RequireClose(const std::vector<float>& got, const std::vector<float>& want,
                  float tolerance) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO("element " << i);
    REQUIRE(std::abs(got[i] - want[i]) <=
            tolerance * (1.0f + std::abs(want[i])));
  }
}

TEST_CASE("dense kernels on a GPU stream agree with the CPU arithmetic",
          "[nn_gpu]") {
  if (!testing::GpuOrSkip("nn_gpu_test")) return;
  const uint64_t seed = testing::TestSeed("nn_gpu");
  INFO("seed " << seed << " (ACTORFLOW_SEED replays it)");
  std::mt19937_64 rng(seed);
  Device device;

  SECTION("matmul in every transpose, and an empty inner size") {
    const int64_t m = 37, k = 53, n = 29;
    for (bool ta : {false, true}) {
      for (bool tb : {false, true}) {
        const std::vector<float> a = Random(m * k, &rng);
        const std::vector<float> b = Random(k * n, &rng);
        const int64_t a_rows = ta ? k : m, a_cols = ta ? m : k;
        const int64_t b_rows = tb ? n : k, b_cols = tb ? k : n;
        std::vector<float> want(m * n);
        MatMul(a.data(), a_rows, a_cols, ta, b.data(), b_rows, b_cols, tb,
               want.data());
        float* out = device.Alloc<float>(m * n);
        gpu::LaunchMatMul(device.Up(a), a_rows, a_cols, ta, device.Up(b),
                          b_rows, b_cols, tb, out, device.stream());
        INFO("transpose_a " << ta << ", transpose_b " << tb);
        RequireClose(device.Down(out, m * n), want, 1e-5f);
      }
    }
    float* out = device.Up(std::vector<float>(6, 7.0f));
    gpu::LaunchMatMul(device.Alloc<float>(0), 2, 0, false,
                      device.Alloc<float>(0), 0, 3, false, out,
                      device.stream());
    CHECK(device.Down(out, 6) == std::vector<float>(6, 0.0f));
  }

  SECTION("bias, relu and their gradients") {
    const int64_t rows = 9, cols = 13;
    const std::vector<float> x = Random(rows * cols, &rng);
    const std::vector<float> bias = Random(cols, &rng);
    std::vector<float> want(rows * cols), want_relu(rows * cols),
        want_grad(rows * cols), want_db(cols);
    BiasAdd(x.data(), bias.data(), rows, cols, want.data());
    Relu(x.data(), rows * cols, want_relu.data());
    ReluGrad(want.data(), want_relu.data(), rows * cols, want_grad.data());
    BiasAddGrad(x.data(), rows, cols, want_db.data());
    float* dx = device.Up(x);
    float* out = device.Alloc<float>(rows * cols);
    float* relu = device.Alloc<float>(rows * cols);
    float* grad = device.Alloc<float>(rows * cols);
    float* db = device.Alloc<float>(cols);
    gpu::LaunchBiasAdd(dx, device.Up(bias), rows, cols, out, device.stream());
    gpu::LaunchRelu(dx, rows * cols, relu, device.stream());
    gpu::LaunchReluGrad(out, relu, rows * cols, grad, device.stream());
    gpu::LaunchBiasAddGrad(dx, rows, cols, db, device.stream());
    CHECK(device.Down(out, rows * cols) == want);
    CHECK(device.Down(relu, rows * cols) == want_relu);
    CHECK(device.Down(grad, rows * cols) == want_grad);
    RequireClose(device.Down(db, cols), want_db, 1e-6f);
    // Zero rows: the bias gradient is zeros.
    gpu::LaunchBiasAddGrad(dx, 0, cols, db, device.stream());
    CHECK(device.Down(db, cols) == std::vector<float>(cols, 0.0f));
  }

  SECTION("softmax cross-entropy, accuracy and a bad label") {
    const int64_t rows = 11, classes = 10;
    const std::vector<float> logits = Random(rows * classes, &rng);
    std::vector<int32_t> labels(rows);
    for (int64_t i = 0; i < rows; ++i) labels[i] = (i * 7) % classes;
    double want_loss = 0;
    std::vector<float> want_d(rows * classes);
    REQUIRE(SoftmaxCrossEntropy(logits.data(), labels.data(), rows, classes,
                                &want_loss, want_d.data())
                .ok());
    const float* dl = device.Up(logits);
    const int32_t* dy = device.Up(labels);
    double* scratch = device.Alloc<double>(rows);
    double* loss = device.Alloc<double>(1);
    float* d = device.Alloc<float>(rows * classes);
    int64_t* correct = device.Alloc<int64_t>(1);
    gpu::LaunchSoftmaxXent(dl, dy, rows, classes, scratch, loss, d,
                           device.stream());
    gpu::LaunchCountCorrect(dl, dy, rows, classes, correct, device.stream());
    CHECK(device.Down(loss, 1)[0] == Approx(want_loss).epsilon(1e-6));
    RequireClose(device.Down(d, rows * classes), want_d, 1e-6f);
    CHECK(device.Down(correct, 1)[0] ==
          CountCorrect(logits.data(), labels.data(), rows, classes));
    labels[3] = classes;  // out of range: that row's loss is NaN
    gpu::LaunchSoftmaxXent(dl, device.Up(labels), rows, classes, scratch, loss,
                           d, device.stream());
    CHECK(std::isnan(device.Down(loss, 1)[0]));
    // No rows: loss and count are written as zero.
    gpu::LaunchSoftmaxXent(dl, dy, 0, classes, scratch, loss, d,
                           device.stream());
    gpu::LaunchCountCorrect(dl, dy, 0, classes, correct, device.stream());
    CHECK(device.Down(loss, 1)[0] == 0.0);
    CHECK(device.Down(correct, 1)[0] == 0);
  }

  SECTION("sgd with momentum over three gradients, then an empty step") {
    const int64_t n = 1029;
    std::vector<std::vector<float>> grads = {Random(n, &rng), Random(n, &rng),
                                             Random(n, &rng)};
    std::vector<float> v(n, 0.0f), want(n);
    gpu::SgdGrads terms;
    for (const auto& g : grads) terms.grad[terms.count++] = device.Up(g);
    float* dv = device.Up(v);
    float* delta = device.Alloc<float>(n);
    for (int step = 0; step < 2; ++step) {
      SgdMomentum({grads[0].data(), grads[1].data(), grads[2].data()}, 6, 0.05,
                  0.9, n, v.data(), want.data());
      gpu::LaunchSgdMomentum(terms, 6, 0.05, 0.9, n, dv, delta,
                             device.stream());
      RequireClose(device.Down(delta, n), want, 1e-6f);
    }
    RequireClose(device.Down(dv, n), v, 1e-6f);
    gpu::LaunchSgdMomentum(terms, 0, 0.05, 0.9, n, dv, delta, device.stream());
    CHECK(device.Down(delta, n) == std::vector<float>(n, 0.0f));
    RequireClose(device.Down(dv, n), v, 1e-6f);
  }
}

TEST_CASE("the MLP plan on GPU streams follows the sequential loop",
          "[nn_gpu]") {
  if (!testing::GpuOrSkip("nn_gpu_test")) return;
  for (int towers : {1, 2}) {
    examples::MnistOptions o;
    o.epochs = 2;
    o.train_limit = 640;
    o.test_limit = 320;
    o.model.lr = 0.02;
    o.model.streams = towers;
    o.model.gpu = true;
    INFO("towers " << towers);
    auto reference = examples::TrainSequential(o);
    INFO(reference.status().ToString());
    REQUIRE(reference.ok());
    auto plan = examples::TrainWithPlan(o);
    INFO(plan.status().ToString());
    REQUIRE(plan.ok());
    REQUIRE(plan->pieces.size() == reference->pieces.size());
    for (size_t i = 0; i < plan->pieces.size(); ++i) {
      const PieceResult& got = plan->pieces[i];
      const PieceResult& want = reference->pieces[i];
      INFO("piece " << i << ": GPU loss " << got.loss_sum << ", CPU "
                    << want.loss_sum);
      REQUIRE(got.train == want.train);
      REQUIRE(got.rows == want.rows);
      REQUIRE(std::abs(got.loss_sum - want.loss_sum) <=
              1e-3 * (1 + std::abs(want.loss_sum)));
      // A row near a tie may flip; no more than one per piece here.
      REQUIRE(std::abs(got.correct - want.correct) <= 1);
    }
  }
}

TEST_CASE("the MLP plan on GPU streams resumes bit for bit from a checkpoint",
          "[nn_gpu]") {
  if (!testing::GpuOrSkip("nn_gpu_test")) return;
  const std::string root = testing::TestTempDir("gpu_checkpoints");
  examples::MnistOptions o;
  o.epochs = 2;
  o.train_limit = 640;
  o.test_limit = 320;
  o.model.lr = 0.02;
  o.model.streams = 2;
  o.model.gpu = true;
  o.checkpoint_dir = root;
  o.checkpoint_every = 3;
  auto whole = examples::TrainWithPlan(o);
  INFO(whole.status().ToString());
  REQUIRE(whole.ok());
  // Back to the checkpoint at step 6 (epoch 1, piece 6): the velocities and
  // weights on the devices come from it.
  auto list = ListCheckpoints(root);
  REQUIRE(list.ok());
  for (const auto& [piece, path] : *list) {
    if (piece > 6) std::filesystem::remove_all(path);
  }
  o.resume = true;
  auto resumed = examples::TrainWithPlan(o);
  INFO(resumed.status().ToString());
  REQUIRE(resumed.ok());
  CHECK(resumed->resumed_from_step == 6);
  CHECK(resumed->weights_crc32 == whole->weights_crc32);
  CHECK(resumed->epochs.back().train_loss == whole->epochs.back().train_loss);
  CHECK(resumed->epochs.back().test_accuracy ==
        whole->epochs.back().test_accuracy);
}

}  // namespace
}  // namespace actorflow::internal::nn
