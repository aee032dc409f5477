// The built-in kernels on GPU streams. Each derives from its CPU class
// (same attributes, same signature checks, same shape inference) and
// replaces Forward with launches on the task's CUDA stream; registers are
// device memory of the stream's device. Blob shapes are host-side metadata
// of the register, set here when the work is queued, so a consumer sees a
// piece's shape with its data. `h2d` and `d2h` copy between a host
// register (pinned by the runtime) and a device register, moving only the
// valid bytes of dynamic blobs. Launch errors fail the act at once; faults
// during the kernel surface when the act's event is waited for.
#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "actorflow/cuda_api.h"
#include "kernels/builtin_kernels.h"
#include "kernels/convert.h"
#include "kernels/gpu/launch.h"

namespace actorflow::internal {
namespace {

// launch.h numbers its element types as DataType does.
constexpr bool Same(gpu::ElemType a, DataType b) {
  return static_cast<int>(a) == static_cast<int>(b);
}
static_assert(Same(gpu::kFloat32, DT_FLOAT32) &&
              Same(gpu::kFloat64, DT_FLOAT64) && Same(gpu::kInt8, DT_INT8) &&
              Same(gpu::kUInt8, DT_UINT8) && Same(gpu::kInt32, DT_INT32) &&
              Same(gpu::kInt64, DT_INT64) && Same(gpu::kBool, DT_BOOL));

gpu::ElemType ElemTypeOf(DataType type) {
  return static_cast<gpu::ElemType>(type);
}

absl::Status Launched(const char* what) { return cuda::LastLaunchError(what); }

class GpuSourceKernel final : public SourceKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    RegisterView out = ctx->output(0);
    const double value = ValueOf(ctx->piece_id());
    for (int b = 0; b < out.num_blobs(); ++b) {
      TensorView blob = out.blob(b);
      uint64_t pattern = 0;
      VisitDataType(blob.data_type(), [&](auto tag) {
        using T = typename decltype(tag)::type;
        T element = ConvertElement<T>(value);
        std::memcpy(&pattern, &element, sizeof(T));
      });
      gpu::LaunchFill(blob.mutable_raw_data(), blob.elem_cnt(),
                      static_cast<int>(DataTypeSize(blob.data_type())), pattern,
                      ctx->cuda_stream());
      absl::Status status = Launched("source: fill kernel launch");
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
};

// identity, h2d and d2h: one asynchronous copy per blob of its valid bytes
// (unified addressing tells the direction).
absl::Status CopyForward(KernelContext* ctx, const char* what) {
  return ForEachBlob(
      ctx->input(0), ctx->output(0),
      [&](int, ConstTensorView from, TensorView to) -> absl::Status {
        if (from.byte_size() == 0) return absl::OkStatus();
        absl::Status status =
            cuda::MemcpyAsync(to.mutable_raw_data(), from.raw_data(),
                              from.byte_size(), ctx->cuda_stream());
        if (status.ok()) return status;
        return absl::Status(status.code(),
                            absl::StrCat(what, ": ", status.message()));
      });
}

class GpuIdentityKernel final : public IdentityKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    return CopyForward(ctx, "identity");
  }
};

// `h2d` (host register in, device register out) and `d2h` (the reverse).
// The placement of each side is checked by plan validation.
class CopyKernel : public UnaryKernel {
 public:
  explicit CopyKernel(const char* name) : name_(name) {}
  absl::Status Forward(KernelContext* ctx) override {
    return CopyForward(ctx, name_);
  }

 private:
  const char* name_;
};

class H2dKernel final : public CopyKernel {
 public:
  H2dKernel() : CopyKernel("h2d") {}
};

class D2hKernel final : public CopyKernel {
 public:
  D2hKernel() : CopyKernel("d2h") {}
};

class GpuScaleKernel final : public ScaleKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    return ForEachBlob(ctx->input(0), ctx->output(0),
                       [&](int, ConstTensorView from, TensorView to) {
                         gpu::LaunchScale(ElemTypeOf(to.data_type()),
                                          from.raw_data(),
                                          to.mutable_raw_data(), to.elem_cnt(),
                                          factor(), ctx->cuda_stream());
                         return Launched("scale: kernel launch");
                       });
  }
};

class GpuAddKernel final : public AddKernel {
 public:
  // The device code adds floating point only.
  absl::Status Init(const KernelInitContext& ctx) override {
    constexpr DataType kFloating[] = {DT_FLOAT32, DT_FLOAT64};
    absl::Status status = AddKernel::Init(ctx);
    if (status.ok()) status = ctx.ExpectInputTypes(kFloating);
    return status;
  }
  // Up to kMaxAddInputs terms per launch; later launches accumulate onto
  // the output, which keeps the CPU kernel's left-to-right order.
  absl::Status Forward(KernelContext* ctx) override {
    const int n = ctx->num_inputs();
    return ForEachBlob(
        ctx->input(0), ctx->output(0),
        [&](int b, ConstTensorView, TensorView to) -> absl::Status {
          for (int begin = 0; begin < n; begin += gpu::kMaxAddInputs) {
            gpu::AddInputs batch;
            batch.accumulate = begin > 0;
            int end = std::min(n, begin + gpu::kMaxAddInputs);
            for (int k = begin; k < end; ++k) {
              absl::Status same = CheckAddTermShape(*ctx, k, b);
              if (!same.ok()) return same;
              batch.in[batch.count++] = ctx->input(k).blob(b).raw_data();
            }
            gpu::LaunchAdd(ElemTypeOf(to.data_type()), batch,
                           to.mutable_raw_data(), to.elem_cnt(),
                           ctx->cuda_stream());
            absl::Status status = Launched("add: kernel launch");
            if (!status.ok()) return status;
          }
          return absl::OkStatus();
        });
  }
};

class GpuCastKernel final : public CastKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    return ForEachBlob(ctx->input(0), ctx->output(0),
                       [&](int, ConstTensorView from, TensorView to) {
                         gpu::LaunchCast(ElemTypeOf(from.data_type()),
                                         ElemTypeOf(to.data_type()),
                                         from.raw_data(), to.mutable_raw_data(),
                                         to.elem_cnt(), ctx->cuda_stream());
                         return Launched("cast: kernel launch");
                       });
  }
};

class GpuNormalizeKernel final : public NormalizeKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    ConstTensorView from = ctx->input(0).blob(0);
    TensorView to = ctx->output(0).blob(0);
    if (to.is_dynamic()) {
      absl::Status status = to.set_shape(from.shape());
      if (!status.ok()) return status;
    }
    gpu::NormalizeParams params;
    Layout(from.shape(), &params.channels, &params.inner);
    for (int64_t c = 0; c < params.channels; ++c) {
      params.mean[c] = mean()[c];
      params.inv_std[c] = inv_std()[c];
    }
    gpu::LaunchNormalize(ElemTypeOf(from.data_type()), from.raw_data(),
                         static_cast<float*>(to.mutable_raw_data()),
                         to.elem_cnt(), params, ctx->cuda_stream());
    return Launched("normalize: kernel launch");
  }
};

class GpuHeadKernel final : public HeadKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    ConstRegisterView in = ctx->input(0);
    RegisterView out = ctx->output(0);
    for (int b = 0; b < out.num_blobs(); ++b) {
      ConstTensorView from = in.blob(b);
      TensorView to = out.blob(b);
      std::vector<int64_t> shape(from.shape().begin(), from.shape().end());
      shape[0] = RowsOf(ctx->piece_id(), shape[0]);
      absl::Status status = to.set_shape(shape);
      if (!status.ok()) return status;
      if (to.byte_size() == 0) continue;
      status = cuda::MemcpyAsync(to.mutable_raw_data(), from.raw_data(),
                                 to.byte_size(), ctx->cuda_stream());
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
};

// The running total stays on the device; after each piece it is copied to
// pinned host memory on the same stream, so once the last act's event has
// happened (the runtime waits for every event before it reads summaries)
// the host copy is the final sum. Sums are in double, per blob in a fixed
// tree order: equal to the CPU's sequential sum whenever the sums are exact
// in double (e.g. values with few significant bits, as the examples use).
class GpuChecksumKernel final : public ChecksumKernel {
 public:
  ~GpuChecksumKernel() override {
    if (partials_ != nullptr) cuda::DeviceFree(device_, partials_);
    if (host_total_ != nullptr) cuda::PinnedFree(host_total_);
  }

  absl::Status Forward(KernelContext* ctx) override {
    if (partials_ == nullptr) {
      absl::Status status = Allocate(ctx->stream().device_index);
      if (!status.ok()) return status;
    }
    ConstRegisterView in = ctx->input(0);
    for (int b = 0; b < in.num_blobs(); ++b) {
      ConstTensorView blob = in.blob(b);
      gpu::LaunchSum(ElemTypeOf(blob.data_type()), blob.raw_data(),
                     blob.elem_cnt(), partials_, partials_ + gpu::kSumPartials,
                     !started_, ctx->cuda_stream());
      started_ = true;
      absl::Status status = Launched("checksum: kernel launch");
      if (!status.ok()) return status;
    }
    if (started_) {
      absl::Status status =
          cuda::MemcpyAsync(host_total_, partials_ + gpu::kSumPartials,
                            sizeof(double), ctx->cuda_stream());
      if (!status.ok()) return status;
    }
    CountPiece(ctx->piece_id(), 0.0);
    return absl::OkStatus();
  }

  std::optional<SinkSummary> sink_summary() const override {
    SinkSummary summary = summary_;
    summary.checksum = host_total_ != nullptr ? *host_total_ : 0.0;
    return summary;
  }

  // Saved from the host copy (the stream has drained); restored into the
  // device total, which the next piece adds to.
  absl::Status RestoreState(const KernelStateContext& ctx,
                            const KernelState& state) override {
    absl::Status status = ChecksumKernel::RestoreState(ctx, state);
    if (!status.ok()) return status;
    if (partials_ == nullptr) {
      status = Allocate(ctx.stream.device_index);
      if (!status.ok()) return status;
    }
    *host_total_ = summary_.checksum;
    status = cuda::MemcpyHostToDevice(device_, partials_ + gpu::kSumPartials,
                                      host_total_, sizeof(double));
    if (!status.ok()) return status;
    started_ = true;
    return absl::OkStatus();
  }

 private:
  absl::Status Allocate(int device) {
    device_ = device;
    // kSumPartials of scratch, then the running total.
    auto scratch =
        cuda::DeviceMalloc(device, (gpu::kSumPartials + 1) * sizeof(double));
    if (!scratch.ok()) return scratch.status();
    auto host = cuda::PinnedMalloc(sizeof(double));
    if (!host.ok()) {
      cuda::DeviceFree(device, *scratch);
      return host.status();
    }
    partials_ = static_cast<double*>(*scratch);
    host_total_ = static_cast<double*>(*host);
    *host_total_ = 0;
    return absl::OkStatus();
  }

  int device_ = 0;
  bool started_ = false;  // the device total has been set
  double* partials_ = nullptr;
  double* host_total_ = nullptr;
};

// A device kernel of known length: for tests and benchmarks of the stream
// machinery with work of a given size.
class GpuSpinKernel final : public SpinKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    gpu::LaunchSpin(std::chrono::nanoseconds(spin()).count(),
                    ctx->cuda_stream());
    absl::Status status = Launched("spin: kernel launch");
    if (!status.ok() || ctx->num_outputs() == 0) return status;
    return CopyForward(ctx, "spin");
  }
};

ACTORFLOW_REGISTER_GPU_KERNEL("source", GpuSourceKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("spin", GpuSpinKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("identity", GpuIdentityKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("scale", GpuScaleKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("add", GpuAddKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("cast", GpuCastKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("normalize", GpuNormalizeKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("head", GpuHeadKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("checksum", GpuChecksumKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("h2d", H2dKernel);
ACTORFLOW_REGISTER_GPU_KERNEL("d2h", D2hKernel);

}  // namespace
}  // namespace actorflow::internal
