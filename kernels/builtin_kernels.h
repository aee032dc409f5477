#ifndef ACTORFLOW_KERNELS_BUILTIN_KERNELS_H_
#define ACTORFLOW_KERNELS_BUILTIN_KERNELS_H_

#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

#include "actorflow/kernel.h"

// The built-in kernels' CPU classes. Their Init checks attributes and
// signature and states the outputs' blobs; the GPU versions (kernels/gpu)
// derive from them and replace only Forward, so a plan means the same on
// either device. Kernels work blob by blob: output blob i comes from input
// blob i, and only the valid elements of dynamic blobs are read or moved.
namespace actorflow::internal {

// `source`: every element of piece p is value + p*step, converted to the
// blob's type as `cast` converts (float attrs value, default 0, and step,
// default 1). Its blobs are the plan's: a source is where shapes are stated.
class SourceKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  double ValueOf(int64_t piece) const {
    return value_ + static_cast<double>(piece) * step_;
  }

 private:
  double value_ = 0;
  double step_ = 1;
};

// One input "in", one output "out" with the input's blobs.
class UnaryKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
};

// `identity`: out = in, any type.
class IdentityKernel : public UnaryKernel {
 public:
  absl::Status Forward(KernelContext* ctx) override;
};

// `scale`: out = in * factor, the product in double, on float32 and
// float64 blobs (float attr factor, required).
class ScaleKernel : public UnaryKernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  double factor() const { return factor_; }

 private:
  double factor_ = 1;
};

// `add`: out = in[0] + in[1] + ..., summed in the blobs' type in list
// order; float32 and float64 inputs with the same blobs.
class AddKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
};

// `cast`: out = in converted to attr `to` ("float32", "int64", "uint8",
// ...; see kernels/convert.h for the rules), shapes kept.
class CastKernel : public UnaryKernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  DataType to() const { return to_; }

 private:
  DataType to_ = DT_FLOAT32;
};

// `head`: a dynamic copy of the input: piece p keeps the first
// 1 + p % mod entries along dimension 0 of each blob (all of them if there
// are fewer). Attr `mod` (int, >= 1). Tests and examples use it to make
// pieces of varying size.
class HeadKernel : public UnaryKernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  // Dimension 0 of piece `piece`'s output, for an input whose is `rows`.
  int64_t RowsOf(int64_t piece, int64_t rows) const {
    int64_t keep = 1 + piece % mod_;
    return keep < rows ? keep : rows;
  }

 private:
  int64_t mod_ = 1;
};

// `normalize`: out = (float(in) - mean[c]) * (1 / std[c]) in float32, c the
// element's index along axis `axis` (int attr, default -1: the last). Attrs
// `mean` and `std`: float lists of one value or one per channel (at most
// 16). One blob in, float32 out of its shape; any numeric type but bool.
class NormalizeKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;

 protected:
  // Channels and the elements per channel step, for a piece of `shape`.
  void Layout(absl::Span<const int64_t> shape, int64_t* channels,
              int64_t* inner) const;
  const std::vector<float>& mean() const { return mean_; }
  const std::vector<float>& inv_std() const { return inv_std_; }

 private:
  int64_t axis_ = -1;
  std::vector<float> mean_;     // one per channel
  std::vector<float> inv_std_;  // one per channel
};

// `checksum`: a sink. Sums the valid elements of every blob of every piece
// in double (bool counts 1 for true) and checks that pieces arrive in order
// (0, 1, 2, ...). Its SinkSummary is what `actorflow run` reports under the
// task's name.
class ChecksumKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override;
  absl::Status Forward(KernelContext* ctx) override;
  std::optional<SinkSummary> sink_summary() const override { return summary_; }
  // The running totals: pieces, checksum, in_order.
  bool has_state() const override { return true; }
  absl::Status SaveState(const KernelStateContext& ctx,
                         KernelState* state) override;
  absl::Status RestoreState(const KernelStateContext& ctx,
                            const KernelState& state) override;

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

// Init of a kernel with one input and an optional output with the input's
// blobs (spin, fail).
absl::Status InitPassThrough(const KernelInitContext& ctx);

// Output blob i takes input blob i's shape and valid bytes (host memory).
absl::Status CopyEveryBlob(ConstRegisterView in, RegisterView out);
// The same, on the path of every act of identity-like kernels: one static
// blob (the common case) is one memcpy; anything else the loop above.
inline absl::Status CopyBlobs(ConstRegisterView in, RegisterView out) {
  if (__builtin_expect(out.num_blobs() == 1, 1)) {
    TensorView to = out.blob(0);
    if (__builtin_expect(!to.is_dynamic(), 1)) {
      const int64_t bytes = to.byte_size();
      if (bytes > 0) {
        std::memcpy(to.mutable_raw_data(), in.blob(0).raw_data(), bytes);
      }
      return absl::OkStatus();
    }
  }
  return CopyEveryBlob(in, out);
}

// Runs fn(b, in_blob, out_blob) for each blob pair, after giving a dynamic
// output blob its input blob's shape; stops at the first error.
template <typename Fn>
absl::Status ForEachBlob(ConstRegisterView in, RegisterView out, Fn&& fn) {
  for (int b = 0; b < out.num_blobs(); ++b) {
    ConstTensorView from = in.blob(b);
    TensorView to = out.blob(b);
    if (to.is_dynamic()) {
      absl::Status status = to.set_shape(from.shape());
      if (!status.ok()) return status;
    }
    absl::Status status = fn(b, from, to);
    if (!status.ok()) return status;
  }
  return absl::OkStatus();
}

// Each piece's blobs in one add term must have the first term's shape
// (they can differ only when dynamic).
absl::Status CheckAddTermShape(const KernelContext& ctx, int term, int blob);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_KERNELS_BUILTIN_KERNELS_H_
