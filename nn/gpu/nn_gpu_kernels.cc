// The dense-layer kernels on GPU streams (CUDA builds and the emulated
// device). Each derives from its CPU class (same attributes, checks and
// shape inference) and replaces Forward with launches on the task's stream
// (dense_launch.h); registers are device memory. Scratch (the optimizer's
// velocity, per-row losses) is device memory the kernel owns, allocated at
// its first act on the stream's device.
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/cuda_api.h"
#include "kernels/gpu/launch.h"
#include "nn/dense_math.h"
#include "nn/gpu/dense_launch.h"
#include "nn/nn_kernels.h"

namespace actorflow::internal::nn {
namespace {

absl::Status Launched(const char* what) { return cuda::LastLaunchError(what); }

// Device memory owned by a kernel, freed with it.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cuda::DeviceFree(device_, ptr_);
  }
  // At least `bytes` on `device`; the contents are undefined when it grows.
  // Growing frees the old memory, so callers size it once, up front.
  absl::Status Reserve(int device, size_t bytes) {
    if (ptr_ != nullptr && bytes <= bytes_) return absl::OkStatus();
    if (ptr_ != nullptr) cuda::DeviceFree(device_, ptr_);
    ptr_ = nullptr;
    auto memory = cuda::DeviceMalloc(device, bytes == 0 ? 1 : bytes);
    if (!memory.ok()) return memory.status();
    ptr_ = *memory;
    device_ = device;
    bytes_ = bytes;
    return absl::OkStatus();
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr_);
  }
  bool empty() const { return ptr_ == nullptr; }

 private:
  void* ptr_ = nullptr;
  int device_ = 0;
  size_t bytes_ = 0;
};

class GpuMatMulKernel final : public MatMulKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView a = ctx->input("a").blob(0);
    ConstTensorView b = ctx->input("b").blob(0);
    TensorView out = ctx->output("out").blob(0);
    auto shape = OutputShape(a.shape(), b.shape());
    if (!shape.ok()) return shape.status();
    absl::Status status = Shape(out, *shape);
    if (!status.ok()) return status;
    gpu::LaunchMatMul(Floats(a), a.shape()[0], a.shape()[1], transpose_a_,
                      Floats(b), b.shape()[0], b.shape()[1], transpose_b_,
                      Floats(out), ctx->cuda_stream());
    return Launched("matmul: kernel launch");
  }
};

class GpuBiasAddKernel final : public BiasAddKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView x = ctx->input("x").blob(0);
    ConstTensorView bias = ctx->input("bias").blob(0);
    TensorView out = ctx->output("out").blob(0);
    absl::Status status = Shape(out, x.shape());
    if (!status.ok()) return status;
    if (x.shape()[1] != bias.shape()[0]) return SameShape(x, bias);
    gpu::LaunchBiasAdd(Floats(x), Floats(bias), x.shape()[0], x.shape()[1],
                       Floats(out), ctx->cuda_stream());
    return Launched("bias_add: kernel launch");
  }
};

class GpuBiasAddGradKernel final : public BiasAddGradKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView dy = ctx->input("dy").blob(0);
    gpu::LaunchBiasAddGrad(Floats(dy), dy.shape()[0], dy.shape()[1],
                           Floats(ctx->output("out").blob(0)),
                           ctx->cuda_stream());
    return Launched("bias_add_grad: kernel launch");
  }
};

class GpuReluKernel final : public ReluKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView in = ctx->input("in").blob(0);
    TensorView out = ctx->output("out").blob(0);
    absl::Status status = Shape(out, in.shape());
    if (!status.ok()) return status;
    gpu::LaunchRelu(Floats(in), in.elem_cnt(), Floats(out), ctx->cuda_stream());
    return Launched("relu: kernel launch");
  }
};

class GpuReluGradKernel final : public ReluGradKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView dy = ctx->input("dy").blob(0);
    ConstTensorView y = ctx->input("y").blob(0);
    TensorView out = ctx->output("out").blob(0);
    absl::Status status = SameShape(dy, y);
    if (status.ok()) status = Shape(out, dy.shape());
    if (!status.ok()) return status;
    gpu::LaunchReluGrad(Floats(dy), Floats(y), dy.elem_cnt(), Floats(out),
                        ctx->cuda_stream());
    return Launched("relu_grad: kernel launch");
  }
};

// A label outside [0, classes) gives a NaN loss here (the CPU kernel fails
// the act naming the row; the device cannot).
class GpuSoftmaxXentKernel final : public SoftmaxXentKernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = SoftmaxXentKernel::Init(ctx);
    if (!status.ok()) return status;
    max_rows_ = ctx.input("logits")->blobs[0].shape[0];
    return absl::OkStatus();
  }

  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView logits = ctx->input("logits").blob(0);
    ConstTensorView labels = ctx->input("labels").blob(0);
    TensorView dlogits = ctx->output("dlogits").blob(0);
    absl::Status status = SameRows(logits, labels);
    if (status.ok()) status = Shape(dlogits, logits.shape());
    if (status.ok()) {
      status = row_loss_.Reserve(ctx->stream().device_index,
                                 max_rows_ * sizeof(double));
    }
    if (!status.ok()) return status;
    gpu::LaunchSoftmaxXent(
        Floats(logits), static_cast<const int32_t*>(labels.raw_data()),
        logits.shape()[0], logits.shape()[1], row_loss_.as<double>(),
        static_cast<double*>(ctx->output("loss").blob(0).mutable_raw_data()),
        Floats(dlogits), ctx->cuda_stream());
    return Launched("softmax_xent: kernel launch");
  }

 private:
  int64_t max_rows_ = 0;
  DeviceBuffer row_loss_;
};

class GpuAccuracyKernel final : public AccuracyKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView logits = ctx->input("logits").blob(0);
    ConstTensorView labels = ctx->input("labels").blob(0);
    absl::Status status = SameRows(logits, labels);
    if (!status.ok()) return status;
    gpu::LaunchCountCorrect(
        Floats(logits), static_cast<const int32_t*>(labels.raw_data()),
        logits.shape()[0], logits.shape()[1],
        static_cast<int64_t*>(ctx->output("out").blob(0).mutable_raw_data()),
        ctx->cuda_stream());
    return Launched("accuracy: kernel launch");
  }
};

// The velocity lives on the device, zeroed at the first act.
class GpuSgdMomentumKernel final : public SgdMomentumKernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = SgdMomentumKernel::Init(ctx);
    if (!status.ok()) return status;
    int grads = 0;
    for (const KernelIo& io : ctx.inputs()) grads += io.name == "grad";
    if (grads > gpu::kMaxGrads) {
      return absl::InvalidArgumentError(
          absl::StrCat("consumed_regst_desc_id['grad']: ", grads,
                       " gradients; on a GPU stream sgd_momentum sums at "
                       "most ",
                       gpu::kMaxGrads));
    }
    elements_ = static_cast<int64_t>(velocity_.size());
    velocity_ = {};  // the host copy is the CPU kernel's
    return absl::OkStatus();
  }

  absl::Status Forward(KernelContext* ctx) override {
    if (velocity_device_.empty()) {
      absl::Status status = velocity_device_.Reserve(ctx->stream().device_index,
                                                     elements_ * sizeof(float));
      if (!status.ok()) return status;
      ::actorflow::internal::gpu::LaunchFill(velocity_device_.as<float>(),
                                             elements_, sizeof(float), 0,
                                             ctx->cuda_stream());
      status = Launched("sgd_momentum: zeroing the velocity");
      if (!status.ok()) return status;
    }
    gpu::SgdGrads grads;
    for (int i = 0; i < ctx->num_inputs("grad"); ++i) {
      grads.grad[grads.count++] =
          Floats(ctx->input("grad", i).blob(0)) + begin_;
    }
    const int64_t count = Samples(ctx);
    gpu::LaunchSgdMomentum(grads, count, NextRate(count), momentum_, elements_,
                           velocity_device_.as<float>(),
                           Floats(ctx->output("delta").blob(0)),
                           ctx->cuda_stream());
    return Launched("sgd_momentum: kernel launch");
  }

  // The velocity between the device and the host (the stream has drained).
  absl::Status SaveState(const KernelStateContext& ctx,
                         KernelState* state) override {
    std::vector<float> velocity(elements_, 0.0f);
    if (!velocity_device_.empty() && elements_ > 0) {
      absl::Status status = cuda::MemcpyDeviceToHost(
          ctx.stream.device_index, velocity.data(),
          velocity_device_.as<float>(), elements_ * sizeof(float));
      if (!status.ok()) return status;
    }
    state->AddValues<float>("velocity", velocity);
    state->AddScalar<int64_t>("steps", steps_);
    return absl::OkStatus();
  }
  absl::Status RestoreState(const KernelStateContext& ctx,
                            const KernelState& state) override {
    std::vector<float> velocity(elements_);
    absl::Status status =
        state.Read<float>("velocity", absl::MakeSpan(velocity));
    if (!status.ok()) return status;
    auto steps = state.Scalar<int64_t>("steps");
    if (!steps.ok()) return steps.status();
    status = velocity_device_.Reserve(ctx.stream.device_index,
                                      elements_ * sizeof(float));
    if (!status.ok()) return status;
    if (elements_ > 0) {
      status = cuda::MemcpyHostToDevice(
          ctx.stream.device_index, velocity_device_.as<float>(),
          velocity.data(), elements_ * sizeof(float));
      if (!status.ok()) return status;
    }
    steps_ = *steps;
    return absl::OkStatus();
  }

 private:
  int64_t elements_ = 0;
  DeviceBuffer velocity_device_;
};

// The initial weights are made on the host (the same generator as the CPU
// kernel, so both start from equal weights) and copied up; InitialOutput
// waits for its copy, so the register is complete when it is published.
class GpuVariableKernel final : public VariableKernel {
 public:
  ~GpuVariableKernel() override {
    if (initial_ != nullptr) cuda::PinnedFree(initial_);
  }

  absl::Status InitialOutput(KernelContext* ctx) override {
    absl::Status status = QueueInitial(ctx);
    if (!status.ok()) return status;
    return cuda::StreamSynchronize(ctx->stream().device_index,
                                   ctx->cuda_stream());
  }

  absl::Status StartOutput(KernelContext* ctx) override {
    return QueueInitial(ctx);
  }

  absl::Status AddDelta(KernelContext* ctx, const float* from,
                        const float* delta, int64_t n, float* to) override {
    ::actorflow::internal::gpu::AddInputs terms;
    if (from == to) {
      terms.accumulate = true;
    } else {
      terms.in[terms.count++] = from;
    }
    terms.in[terms.count++] = delta;
    ::actorflow::internal::gpu::LaunchAdd(::actorflow::internal::gpu::kFloat32,
                                          terms, to, n, ctx->cuda_stream());
    return Launched("variable: kernel launch");
  }

  absl::Status SaveState(const KernelStateContext& ctx,
                         KernelState* state) override {
    if (last_ == nullptr) return VariableKernel::SaveState(ctx, state);
    std::vector<float> value(ShapeElemCnt(shape_));
    absl::Status status =
        cuda::MemcpyDeviceToHost(ctx.stream.device_index, value.data(), last_,
                                 value.size() * sizeof(float));
    if (!status.ok()) return status;
    state->AddValues<float>("value", value, shape_);
    return absl::OkStatus();
  }
  // The restored weights take the initial values' place: the first act
  // copies them up.
  absl::Status RestoreState(const KernelStateContext&,
                            const KernelState& state) override {
    std::vector<float> value(ShapeElemCnt(shape_));
    absl::Status read = state.Read<float>("value", absl::MakeSpan(value));
    if (!read.ok()) return read;
    if (initial_ == nullptr) {
      auto host =
          cuda::PinnedMalloc(value.empty() ? 1 : value.size() * sizeof(float));
      if (!host.ok()) return host.status();
      initial_ = static_cast<float*>(*host);
    }
    if (!value.empty()) {
      std::memcpy(initial_, value.data(), value.size() * sizeof(float));
    }
    last_ = nullptr;
    return absl::OkStatus();
  }

 private:
  // Queues the copy of the weights into this act's output: the initial
  // values the first time, what the last run ended with after that.
  absl::Status QueueInitial(KernelContext* ctx) {
    TensorView out = ctx->output("out").blob(0);
    float* to = Floats(out);
    if (last_ == nullptr) {
      if (initial_ == nullptr) {
        auto host =
            cuda::PinnedMalloc(out.byte_size() == 0 ? 1 : out.byte_size());
        if (!host.ok()) return host.status();
        initial_ = static_cast<float*>(*host);
        absl::Status status = FillInitial(out.shape(), initial_);
        if (!status.ok()) return status;
      }
      absl::Status status =
          cuda::MemcpyAsync(to, initial_, out.byte_size(), ctx->cuda_stream());
      if (!status.ok()) return status;
    } else if (last_ != to) {
      absl::Status status =
          cuda::MemcpyAsync(to, last_, out.byte_size(), ctx->cuda_stream());
      if (!status.ok()) return status;
    }
    last_ = to;
    return absl::OkStatus();
  }

  float* initial_ = nullptr;  // pinned host memory
};

ACTORFLOW_REGISTER_GPU_KERNEL("matmul", GpuMatMulKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("bias_add", GpuBiasAddKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("bias_add_grad", GpuBiasAddGradKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("relu", GpuReluKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("relu_grad", GpuReluGradKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("softmax_xent", GpuSoftmaxXentKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("accuracy", GpuAccuracyKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("sgd_momentum", GpuSgdMomentumKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("variable", GpuVariableKernel);

}  // namespace
}  // namespace actorflow::internal::nn
