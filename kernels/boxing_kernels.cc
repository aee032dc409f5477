// The boxing kernels the job compiler inserts between placements and
// parallel signatures (actorflow/job_compiler.h): `slice` takes one of n
// near-equal parts of every blob along an axis, `concat` joins its inputs'
// blobs along an axis. `add` (the sum of partial sums) and `identity` (a
// broadcast) are the element-wise kernels. Host memory only: the compiler
// routes device registers through d2h and h2d around them.
#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "actorflow/kernel.h"
#include "thread/balanced_splitter.h"

namespace actorflow::internal {
namespace {

// Rows before the axis, and bytes of one step along it.
struct Layout {
  int64_t outer = 1;
  int64_t inner_bytes = 1;
};
Layout LayoutOf(absl::Span<const int64_t> shape, int axis, size_t elem_size) {
  Layout layout;
  for (int d = 0; d < axis; ++d) layout.outer *= shape[d];
  layout.inner_bytes = static_cast<int64_t>(elem_size);
  for (size_t d = axis + 1; d < shape.size(); ++d) {
    layout.inner_bytes *= shape[d];
  }
  return layout;
}

absl::Status CheckAxis(const KernelInitContext& ctx, int64_t axis) {
  for (const KernelIo& in : ctx.inputs()) {
    for (const BlobDesc& blob : in.blobs) {
      if (axis < 0 || axis >= static_cast<int64_t>(blob.shape.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat("kernel.attr['axis']: ", axis,
                         " is not an axis of blob '", blob.name, "' ",
                         blob.ToString(), " of regst_desc ", in.regst_desc_id));
      }
    }
  }
  return absl::OkStatus();
}

class SliceKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = ctx.ExpectInputs(1, 1);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
    if (!status.ok()) return status;
    absl::StatusOr<int64_t> axis = ctx.IntAttr("axis");
    absl::StatusOr<int64_t> parts = ctx.IntAttr("parts");
    absl::StatusOr<int64_t> index = ctx.IntAttr("index");
    for (const auto* value : {&axis, &parts, &index}) {
      if (!value->ok()) return value->status();
    }
    if (*parts < 1 || *index < 0 || *index >= *parts) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel.attr: index ", *index, " is not a part of ",
                       *parts, " (parts >= 1, 0 <= index < parts)"));
    }
    status = CheckAxis(ctx, *axis);
    if (!status.ok()) return status;
    axis_ = static_cast<int>(*axis);
    parts_ = *parts;
    index_ = *index;
    std::vector<BlobDesc> blobs = ctx.inputs()[0].blobs;
    for (BlobDesc& blob : blobs) {
      // ParallelSignature.split's rule: the first size % parts parts are
      // one longer.
      blob.shape[axis_] =
          BalancedSplitter(blob.shape[axis_], parts_).At(index_).size();
    }
    return ctx.SetOutputBlobs("out", std::move(blobs));
  }

  absl::Status Forward(KernelContext* ctx) override {
    ConstRegisterView in = ctx->input(0);
    RegisterView out = ctx->output(0);
    for (int b = 0; b < out.num_blobs(); ++b) {
      ConstTensorView from = in.blob(b);
      TensorView to = out.blob(b);
      std::vector<int64_t> shape(from.shape().begin(), from.shape().end());
      const Range part = BalancedSplitter(shape[axis_], parts_).At(index_);
      const int64_t size = shape[axis_];
      shape[axis_] = part.size();
      if (to.is_dynamic()) {
        absl::Status status = to.set_shape(shape);
        if (!status.ok()) return status;
      }
      const Layout layout =
          LayoutOf(from.shape(), axis_, DataTypeSize(from.data_type()));
      const char* src = static_cast<const char*>(from.raw_data());
      char* dst = static_cast<char*>(to.mutable_raw_data());
      const int64_t row = part.size() * layout.inner_bytes;
      for (int64_t o = 0; o < layout.outer; ++o) {
        std::memcpy(dst + o * row,
                    src + (o * size + part.begin) * layout.inner_bytes, row);
      }
    }
    return absl::OkStatus();
  }

 private:
  int axis_ = 0;
  int64_t parts_ = 1;
  int64_t index_ = 0;
};

class ConcatKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    absl::Status status = ctx.ExpectInputs(1, INT32_MAX);
    if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
    if (!status.ok()) return status;
    absl::StatusOr<int64_t> axis = ctx.IntAttr("axis");
    if (!axis.ok()) return axis.status();
    status = CheckAxis(ctx, *axis);
    if (!status.ok()) return status;
    axis_ = static_cast<int>(*axis);
    const std::vector<KernelIo>& inputs = ctx.inputs();
    std::vector<BlobDesc> blobs = inputs[0].blobs;
    for (size_t i = 1; i < inputs.size(); ++i) {
      const std::vector<BlobDesc>& other = inputs[i].blobs;
      bool same = other.size() == blobs.size();
      for (size_t b = 0; same && b < blobs.size(); ++b) {
        std::vector<int64_t> a = blobs[b].shape, c = other[b].shape;
        same = a.size() == c.size() &&
               blobs[b].data_type == other[b].data_type &&
               blobs[b].is_dynamic == other[b].is_dynamic;
        if (same) {
          a[axis_] = c[axis_] = 0;
          same = a == c;
          blobs[b].shape[axis_] += other[b].shape[axis_];
        }
      }
      if (!same) {
        return absl::InvalidArgumentError(absl::StrCat(
            "concat: regst_desc ", inputs[i].regst_desc_id,
            " does not match regst_desc ", inputs[0].regst_desc_id,
            " in blob count, data types or any dimension but axis ", axis_));
      }
    }
    return ctx.SetOutputBlobs("out", std::move(blobs));
  }

  absl::Status Forward(KernelContext* ctx) override {
    RegisterView out = ctx->output(0);
    const int n = ctx->num_inputs();
    for (int b = 0; b < out.num_blobs(); ++b) {
      TensorView to = out.blob(b);
      std::vector<int64_t> shape(ctx->input(0).blob(b).shape().begin(),
                                 ctx->input(0).blob(b).shape().end());
      int64_t total = 0;
      for (int i = 0; i < n; ++i) total += ctx->input(i).blob(b).shape()[axis_];
      shape[axis_] = total;
      if (to.is_dynamic()) {
        absl::Status status = to.set_shape(shape);
        if (!status.ok()) return status;
      }
      const Layout layout =
          LayoutOf(shape, axis_, DataTypeSize(to.data_type()));
      char* dst = static_cast<char*>(to.mutable_raw_data());
      int64_t offset = 0;
      for (int i = 0; i < n; ++i) {
        ConstTensorView from = ctx->input(i).blob(b);
        const int64_t length = from.shape()[axis_];
        const int64_t row = length * layout.inner_bytes;
        const char* src = static_cast<const char*>(from.raw_data());
        for (int64_t o = 0; o < layout.outer; ++o) {
          std::memcpy(dst + (o * total + offset) * layout.inner_bytes,
                      src + o * row, row);
        }
        offset += length;
      }
    }
    return absl::OkStatus();
  }

 private:
  int axis_ = 0;
};

}  // namespace

ACTORFLOW_REGISTER_KERNEL("slice", SliceKernel);
ACTORFLOW_REGISTER_KERNEL("concat", ConcatKernel);

}  // namespace actorflow::internal
