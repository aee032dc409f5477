#ifndef ACTORFLOW_KERNELS_BUILTIN_KERNELS_H_
#define ACTORFLOW_KERNELS_BUILTIN_KERNELS_H_

#include <chrono>
#include <optional>

#include "actor/kernel.h"

// The built-in kernels' CPU classes. Their Init checks attributes and
// signature; the GPU versions (kernels/gpu) derive from them and replace
// only Forward, so a plan means the same on either device.
namespace actorflow {

// `source`: every element of piece p is value + p*step (float attrs value,
// default 0, and step, default 1).
class SourceKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  float ElementOf(int64_t piece) const {
    return static_cast<float>(value_ + static_cast<double>(piece) * step_);
  }

 private:
  double value_ = 0;
  double step_ = 1;
};

// One input "in", one output "out", equal elem_cnt.
class UnaryKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
};

// `identity`: out = in.
class IdentityKernel : public UnaryKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override;
};

// `scale`: out = float(in * factor) (float attr factor, required).
class ScaleKernel : public UnaryKernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  double factor() const { return factor_; }

 private:
  double factor_ = 1;
};

// `add`: out = in[0] + in[1] + ..., in float, summed in list order.
class AddKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
};

// `checksum`: a sink. Sums every element of every piece in double and
// checks that pieces arrive in order (0, 1, 2, ...). Its SinkSummary is
// what `actorflow run` reports under the task's name.
class ChecksumKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
  std::optional<SinkSummary> sink_summary() const override { return summary_; }

 protected:
  // Counts piece `piece_id` and adds `sum` (when known) to the checksum.
  void CountPiece(int64_t piece_id, double sum) {
    if (piece_id != summary_.pieces) summary_.in_order = false;
    summary_.checksum += sum;
    ++summary_.pieces;
  }
  SinkSummary summary_;
};

// `spin` (a test kernel): busy-waits attr `us` (int) microseconds, then
// copies in to out if it has an output.
class SpinKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  std::chrono::microseconds spin() const { return spin_; }

 private:
  std::chrono::microseconds spin_{0};
};

}  // namespace actorflow

#endif  // ACTORFLOW_KERNELS_BUILTIN_KERNELS_H_
