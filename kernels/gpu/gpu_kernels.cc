// The built-in kernels on GPU streams. Each derives from its CPU class
// (same attributes, same signature checks) and replaces Forward with a
// launch on the task's CUDA stream; registers are device memory of the
// stream's device. `h2d` and `d2h` copy between a host register (pinned by
// the runtime) and a device register. Launch errors fail the act at once;
// faults during the kernel surface when the act's event is waited for.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "kernels/builtin_kernels.h"
#include "kernels/gpu/launch.h"
#include "memory/cuda_api.h"

namespace actorflow {
namespace {

class GpuSourceKernel final : public SourceKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override {
    Regst* out = ctx->outputs()[0];
    gpu::LaunchFill(out->data(), out->elem_cnt(), ElementOf(ctx->piece_id()),
                    ctx->cuda_stream());
    return cuda::LastLaunchError("source: fill kernel launch");
  }
};

// identity, h2d and d2h: one asynchronous copy (unified addressing tells
// the direction).
absl::Status CopyForward(KernelContext* ctx, const char* what) {
  const Regst* in = ctx->inputs()[0];
  Regst* out = ctx->outputs()[0];
  if (out->elem_cnt() == 0) return absl::OkStatus();
  absl::Status status =
      cuda::MemcpyAsync(out->data(), in->data(),
                        out->elem_cnt() * sizeof(float), ctx->cuda_stream());
  if (status.ok()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(what, ": ", status.message()));
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
    Regst* out = ctx->outputs()[0];
    gpu::LaunchScale(ctx->inputs()[0]->data(), out->data(), out->elem_cnt(),
                     factor(), ctx->cuda_stream());
    return cuda::LastLaunchError("scale: kernel launch");
  }
};

class GpuAddKernel final : public AddKernel {
 public:
  // Up to kMaxAddInputs terms per launch; later launches accumulate onto
  // the output, which keeps the CPU kernel's left-to-right order.
  absl::Status Forward(KernelContext* ctx) override {
    absl::Span<Regst* const> ins = ctx->inputs();
    Regst* out = ctx->outputs()[0];
    for (size_t begin = 0; begin < ins.size(); begin += gpu::kMaxAddInputs) {
      gpu::AddInputs batch;
      batch.accumulate = begin > 0;
      size_t end = std::min(ins.size(), begin + gpu::kMaxAddInputs);
      for (size_t k = begin; k < end; ++k) {
        batch.in[batch.count++] = ins[k]->data();
      }
      gpu::LaunchAdd(batch, out->data(), out->elem_cnt(), ctx->cuda_stream());
      absl::Status status = cuda::LastLaunchError("add: kernel launch");
      if (!status.ok()) return status;
    }
    return absl::OkStatus();
  }
};

// The running total stays on the device; after each piece it is copied to
// pinned host memory on the same stream, so once the last act's event has
// happened (the runtime waits for every event before it reads summaries)
// the host copy is the final sum. Sums are in double, per piece in a fixed
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
    const Regst* in = ctx->inputs()[0];
    gpu::LaunchSum(in->data(), in->elem_cnt(), partials_,
                   partials_ + gpu::kSumPartials, summary_.pieces == 0,
                   ctx->cuda_stream());
    absl::Status status = cuda::LastLaunchError("checksum: kernel launch");
    if (!status.ok()) return status;
    status = cuda::MemcpyAsync(host_total_, partials_ + gpu::kSumPartials,
                               sizeof(double), ctx->cuda_stream());
    if (!status.ok()) return status;
    CountPiece(ctx->piece_id(), 0.0);
    return absl::OkStatus();
  }

  std::optional<SinkSummary> sink_summary() const override {
    SinkSummary summary = summary_;
    summary.checksum = host_total_ != nullptr ? *host_total_ : 0.0;
    return summary;
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
    absl::Status status = cuda::LastLaunchError("spin: kernel launch");
    if (!status.ok() || ctx->outputs().empty()) return status;
    return CopyForward(ctx, "spin");
  }
};

REGISTER_GPU_KERNEL("source", GpuSourceKernel);
REGISTER_GPU_KERNEL("spin", GpuSpinKernel);
REGISTER_GPU_KERNEL("identity", GpuIdentityKernel);
REGISTER_GPU_KERNEL("scale", GpuScaleKernel);
REGISTER_GPU_KERNEL("add", GpuAddKernel);
REGISTER_GPU_KERNEL("checksum", GpuChecksumKernel);
REGISTER_GPU_KERNEL("h2d", H2dKernel);
REGISTER_GPU_KERNEL("d2h", D2hKernel);

}  // namespace
}  // namespace actorflow
