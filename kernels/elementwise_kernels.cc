#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "kernels/builtin_kernels.h"
#include "kernels/convert.h"

namespace actorflow::internal {
namespace {

constexpr DataType kFloatingTypes[] = {DT_FLOAT32, DT_FLOAT64};

}  // namespace

absl::Status CopyEveryBlob(ConstRegisterView in, RegisterView out) {
  const int n = out.num_blobs();
  for (int b = 0; b < n; ++b) {
    ConstTensorView from = in.blob(b);
    TensorView to = out.blob(b);
    if (to.is_dynamic()) {
      absl::Status status = to.set_shape(from.shape());
      if (!status.ok()) return status;
    }
    const int64_t bytes = from.byte_size();
    if (bytes > 0) std::memcpy(to.mutable_raw_data(), from.raw_data(), bytes);
  }
  return absl::OkStatus();
}

// Blobs match by position; names may differ between inputs.
absl::Status CheckAddTermShape(const KernelContext& ctx, int term, int blob) {
  ConstTensorView first = ctx.input(0).blob(blob);
  ConstTensorView other = ctx.input(term).blob(blob);
  if (other.shape() == first.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "add: blob '", other.name(), "' of regst_desc ",
      ctx.input(term).regst_desc_id(), " has shape ",
      ShapeString(other.shape()), " in this piece, but blob '", first.name(),
      "' of regst_desc ", ctx.input(0).regst_desc_id(), " has ",
      ShapeString(first.shape())));
}

absl::Status UnaryKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, 1);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (status.ok()) status = ctx.InferOutputsLikeInput();
  return status;
}

absl::Status IdentityKernel::Forward(KernelContext* ctx) {
  return CopyBlobs(ctx->input(0), ctx->output(0));
}

absl::Status ScaleKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = UnaryKernel::Init(ctx);
  if (status.ok()) status = ctx.ExpectInputTypes(kFloatingTypes);
  if (!status.ok()) return status;
  absl::StatusOr<double> factor = ctx.FloatAttr("factor");
  if (!factor.ok()) return factor.status();
  factor_ = *factor;
  return absl::OkStatus();
}

absl::Status ScaleKernel::Forward(KernelContext* ctx) {
  return ForEachBlob(
      ctx->input(0), ctx->output(0),
      [&](int, ConstTensorView from, TensorView to) {
        return VisitDataType(to.data_type(), [&](auto tag) -> absl::Status {
          using T = typename decltype(tag)::type;
          if constexpr (std::is_floating_point_v<T>) {
            auto in = from.data<T>();
            auto out = to.mutable_data<T>();
            if (!in.ok()) return in.status();
            if (!out.ok()) return out.status();
            for (size_t i = 0; i < out->size(); ++i) {
              (*out)[i] =
                  static_cast<T>(static_cast<double>((*in)[i]) * factor_);
            }
            return absl::OkStatus();
          }
          return to.mutable_data<double>().status();  // the type error
        });
      });
}

// Integers too: the job compiler adds up partial sums of counts.
constexpr DataType kNumericTypes[] = {DT_FLOAT32, DT_FLOAT64, DT_INT8,
                                      DT_UINT8,   DT_INT32,   DT_INT64};

absl::Status AddKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, INT32_MAX);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (status.ok()) status = ctx.ExpectSameBlobs();
  if (status.ok()) status = ctx.ExpectInputTypes(kNumericTypes);
  if (status.ok()) status = ctx.InferOutputsLikeInput();
  return status;
}

// Each element is the first term's, then plus each other term in input
// order: ((t0 + t1) + t2) + ..., the order the job compiler's gathers and
// reduce-scatters rely on for the same bits. Block by block, so that a
// block of the sum stays in the cache while every term is added to it: one
// pass over the output where a pass per term would stream it through
// memory again for each.
absl::Status AddKernel::Forward(KernelContext* ctx) {
  const int n = ctx->num_inputs();
  return ForEachBlob(
      ctx->input(0), ctx->output(0),
      [&](int b, ConstTensorView first, TensorView to) {
        return VisitDataType(to.data_type(), [&](auto tag) -> absl::Status {
          using T = typename decltype(tag)::type;
          auto out = to.mutable_data<T>();
          if (!out.ok()) return out.status();
          // Inline up to 16 terms: no allocation per act for the sums the
          // compiler makes (one term per part).
          absl::InlinedVector<const T*, 16> terms;
          auto head = first.data<T>();
          if (!head.ok()) return head.status();
          terms.push_back(head->data());
          for (int k = 1; k < n; ++k) {
            absl::Status same = CheckAddTermShape(*ctx, k, b);
            if (!same.ok()) return same;
            auto term = ctx->input(k).blob(b).data<T>();
            if (!term.ok()) return term.status();
            terms.push_back(term->data());
          }
          constexpr size_t kBlock = 16384 / sizeof(T);
          T* sum = out->data();
          const size_t size = out->size();
          for (size_t start = 0; start < size; start += kBlock) {
            const size_t end = std::min(size, start + kBlock);
            std::memcpy(sum + start, terms[0] + start,
                        (end - start) * sizeof(T));
            for (int k = 1; k < n; ++k) {
              const T* term = terms[k];
              for (size_t i = start; i < end; ++i) sum[i] += term[i];
            }
          }
          return absl::OkStatus();
        });
      });
}

absl::Status CastKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, 1);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (!status.ok()) return status;
  absl::StatusOr<std::string> to = ctx.StringAttr("to");
  if (!to.ok()) return to.status();
  absl::StatusOr<DataType> type = ParseDataType(*to);
  if (!type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['to']: ", type.status().message()));
  }
  to_ = *type;
  std::vector<BlobDesc> blobs = ctx.inputs()[0].blobs;
  for (BlobDesc& blob : blobs) blob.data_type = to_;
  return ctx.SetOutputBlobs("out", std::move(blobs));
}

absl::Status CastKernel::Forward(KernelContext* ctx) {
  return ForEachBlob(
      ctx->input(0), ctx->output(0),
      [](int, ConstTensorView from, TensorView to) {
        return VisitDataType(from.data_type(), [&](auto from_tag) {
          using From = typename decltype(from_tag)::type;
          return VisitDataType(to.data_type(), [&](auto to_tag) {
            using To = typename decltype(to_tag)::type;
            auto in = from.data<From>();
            auto out = to.mutable_data<To>();
            if (!in.ok()) return in.status();
            if (!out.ok()) return out.status();
            for (size_t i = 0; i < out->size(); ++i) {
              (*out)[i] = ConvertElement<To>((*in)[i]);
            }
            return absl::OkStatus();
          });
        });
      });
}

absl::Status HeadKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = UnaryKernel::Init(ctx);
  if (!status.ok()) return status;
  absl::StatusOr<int64_t> mod = ctx.IntAttr("mod");
  if (!mod.ok()) return mod.status();
  if (*mod < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['mod']: must be >= 1, got ", *mod));
  }
  mod_ = *mod;
  std::vector<BlobDesc> blobs = ctx.inputs()[0].blobs;
  for (BlobDesc& blob : blobs) {
    if (blob.shape.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("consumed_regst_desc_id['in']: blob '", blob.name,
                       "' of regst_desc ", ctx.inputs()[0].regst_desc_id,
                       " has rank 0; head keeps entries along dimension 0"));
    }
    blob.is_dynamic = true;
  }
  return ctx.SetOutputBlobs("out", std::move(blobs));
}

absl::Status HeadKernel::Forward(KernelContext* ctx) {
  ConstRegisterView in = ctx->input(0);
  RegisterView out = ctx->output(0);
  for (int b = 0; b < out.num_blobs(); ++b) {
    ConstTensorView from = in.blob(b);
    TensorView to = out.blob(b);
    absl::InlinedVector<int64_t, 4> shape(from.shape().begin(),
                                          from.shape().end());
    shape[0] = RowsOf(ctx->piece_id(), shape[0]);
    absl::Status status = to.set_shape(shape);
    if (!status.ok()) return status;
    // Dense storage: the first rows are the first bytes.
    if (to.byte_size() > 0) {
      std::memcpy(to.mutable_raw_data(), from.raw_data(), to.byte_size());
    }
  }
  return absl::OkStatus();
}

absl::Status NormalizeKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, 1);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (!status.ok()) return status;
  const std::vector<BlobDesc>& in = ctx.inputs()[0].blobs;
  if (in.size() != 1 || in[0].data_type == DT_BOOL || in[0].shape.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "consumed_regst_desc_id['in']: normalize takes one numeric blob of "
        "rank 1 or more; regst_desc ",
        ctx.inputs()[0].regst_desc_id, " has ", in.size(), " blob(s)"));
  }
  auto axis = ctx.IntAttrOr("axis", -1);
  auto mean = ctx.FloatListAttr("mean");
  auto stddev = ctx.FloatListAttr("std");
  for (const absl::Status& s :
       {axis.status(), mean.status(), stddev.status()}) {
    if (!s.ok()) return s;
  }
  const int64_t rank = static_cast<int64_t>(in[0].shape.size());
  axis_ = *axis < 0 ? *axis + rank : *axis;
  if (axis_ < 0 || axis_ >= rank) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel.attr['axis']: ", *axis, " is not an axis of ",
                     ShapeString(in[0].shape)));
  }
  const int64_t channels = in[0].shape[axis_];
  auto per_channel = [&](const std::vector<double>& values, const char* name,
                         double fallback,
                         std::vector<float>* out) -> absl::Status {
    const size_t n = values.empty() ? 1 : values.size();
    if (n != 1 && static_cast<int64_t>(n) != channels) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel.attr['", name, "']: ", n, " values for ",
                       channels, " channels (give 1 or ", channels, ")"));
    }
    out->clear();
    for (int64_t c = 0; c < channels; ++c) {
      out->push_back(static_cast<float>(
          values.empty() ? fallback : values[n == 1 ? 0 : c]));
    }
    return absl::OkStatus();
  };
  status = per_channel(*mean, "mean", 0.0, &mean_);
  if (status.ok()) status = per_channel(*stddev, "std", 1.0, &inv_std_);
  if (!status.ok()) return status;
  if (channels > 16) {
    return absl::InvalidArgumentError(absl::StrCat(
        "kernel.attr['axis']: ", channels, " channels (at most 16)"));
  }
  for (float& s : inv_std_) {
    if (s == 0) {
      return absl::InvalidArgumentError("kernel.attr['std']: has a zero");
    }
    s = 1.0f / s;
  }
  std::vector<BlobDesc> out = in;
  out[0].data_type = DT_FLOAT32;
  return ctx.SetOutputBlobs("out", std::move(out));
}

void NormalizeKernel::Layout(absl::Span<const int64_t> shape, int64_t* channels,
                             int64_t* inner) const {
  *channels = shape[axis_];
  *inner = 1;
  for (size_t d = axis_ + 1; d < shape.size(); ++d) *inner *= shape[d];
}

namespace {

// GCC trusts __restrict on parameters: the loop vectorizes.
template <typename T>
void NormalizeRun(const T* __restrict in, int64_t n, float mean, float inv_std,
                  float* __restrict out) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = (static_cast<float>(in[i]) - mean) * inv_std;
  }
}

}  // namespace

absl::Status NormalizeKernel::Forward(KernelContext* ctx) {
  ConstTensorView from = ctx->input(0).blob(0);
  TensorView to = ctx->output(0).blob(0);
  if (to.is_dynamic()) {
    absl::Status status = to.set_shape(from.shape());
    if (!status.ok()) return status;
  }
  auto out = to.mutable_data<float>();
  if (!out.ok()) return out.status();
  int64_t channels = 1, inner = 1;
  Layout(from.shape(), &channels, &inner);
  return VisitDataType(from.data_type(), [&](auto tag) -> absl::Status {
    using T = typename decltype(tag)::type;
    auto in = from.data<T>();
    if (!in.ok()) return in.status();
    // Runs of `inner` elements share a channel: no division per element.
    // One channel (as after a trailing axis of 1): the whole blob is a run.
    const int64_t n = static_cast<int64_t>(in->size());
    if (channels == 1) inner = std::max<int64_t>(n, 1);
    for (int64_t begin = 0, run = 0; begin < n; begin += inner, ++run) {
      const int64_t c = run % channels;
      NormalizeRun(in->data() + begin, std::min(inner, n - begin), mean_[c],
                   inv_std_[c], out->data() + begin);
    }
    return absl::OkStatus();
  });
}

ACTORFLOW_REGISTER_KERNEL("normalize", NormalizeKernel);
ACTORFLOW_REGISTER_KERNEL("identity", IdentityKernel);
ACTORFLOW_REGISTER_KERNEL("scale", ScaleKernel);
ACTORFLOW_REGISTER_KERNEL("add", AddKernel);
ACTORFLOW_REGISTER_KERNEL("cast", CastKernel);
ACTORFLOW_REGISTER_KERNEL("head", HeadKernel);

}  // namespace actorflow::internal
