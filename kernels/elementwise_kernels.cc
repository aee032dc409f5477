#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/builtin_kernels.h"
#include "kernels/convert.h"

namespace actorflow {
namespace {

constexpr DataType kFloatingTypes[] = {DT_FLOAT32, DT_FLOAT64};

}  // namespace

absl::Status CopyEveryBlob(ConstRegstView in, RegstView out) {
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

absl::Status AddKernel::Init(const KernelInitContext& ctx) {
  absl::Status status = ctx.ExpectInputs(1, INT32_MAX);
  if (status.ok()) status = ctx.ExpectOutput(/*required=*/true);
  if (status.ok()) status = ctx.ExpectSameBlobs();
  if (status.ok()) status = ctx.ExpectInputTypes(kFloatingTypes);
  if (status.ok()) status = ctx.InferOutputsLikeInput();
  return status;
}

absl::Status AddKernel::Forward(KernelContext* ctx) {
  const int n = ctx->num_inputs();
  return ForEachBlob(
      ctx->input(0), ctx->output(0),
      [&](int b, ConstTensorView first, TensorView to) {
        return VisitDataType(to.data_type(), [&](auto tag) -> absl::Status {
          using T = typename decltype(tag)::type;
          auto out = to.mutable_data<T>();
          if (!out.ok()) return out.status();
          auto in = first.data<T>();
          if (!in.ok()) return in.status();
          if (!out->empty())
            std::memcpy(out->data(), in->data(), to.byte_size());
          for (int k = 1; k < n; ++k) {
            absl::Status same = CheckAddTermShape(*ctx, k, b);
            if (!same.ok()) return same;
            auto term = ctx->input(k).blob(b).data<T>();
            if (!term.ok()) return term.status();
            for (size_t i = 0; i < out->size(); ++i) (*out)[i] += (*term)[i];
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
  ConstRegstView in = ctx->input(0);
  RegstView out = ctx->output(0);
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

REGISTER_KERNEL("identity", IdentityKernel);
REGISTER_KERNEL("scale", ScaleKernel);
REGISTER_KERNEL("add", AddKernel);
REGISTER_KERNEL("cast", CastKernel);
REGISTER_KERNEL("head", HeadKernel);

}  // namespace actorflow
