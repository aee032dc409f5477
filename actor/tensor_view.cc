#include "actorflow/tensor_view.h"

#include "absl/strings/str_cat.h"

namespace actorflow {
namespace {

std::string BlobLabel(const Blob& blob) {
  return absl::StrCat("blob '", blob.desc->name, "' (regst_desc ",
                      blob.regst_desc_id, ")");
}

}  // namespace

absl::Status ConstTensorView::TypeError(DataType wanted) const {
  if (blob_ == nullptr) {
    return absl::NotFoundError(
        absl::StrCat("no such blob or register: asked for ",
                     DataTypeName(wanted), " data from an empty view"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(BlobLabel(*blob_), ": holds ", DataTypeName(data_type()),
                   ", asked for ", DataTypeName(wanted)));
}

absl::Status TensorView::set_shape(absl::Span<const int64_t> shape) const {
  if (blob_ == nullptr) {
    return absl::NotFoundError(
        "no such blob or register: set_shape on an "
        "empty view");
  }
  const BlobDesc& desc = *blob_->desc;
  if (shape.size() != desc.shape.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        BlobLabel(*blob_), ": shape ", ShapeString(shape), " has rank ",
        shape.size(), ", the blob has rank ", desc.shape.size()));
  }
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0 || shape[d] > desc.shape[d] ||
        (!desc.is_dynamic && shape[d] != desc.shape[d])) {
      return absl::InvalidArgumentError(absl::StrCat(
          BlobLabel(*blob_), ": shape ", ShapeString(shape), ": dimension ", d,
          " is ", shape[d],
          desc.is_dynamic ? absl::StrCat(", outside [0, ", desc.shape[d], "]")
                          : absl::StrCat(", but the blob is static with ",
                                         ShapeString(desc.shape))));
    }
  }
  blob_->shape.assign(shape.begin(), shape.end());
  blob_->elem_cnt = ShapeElemCnt(shape);
  return absl::OkStatus();
}

}  // namespace actorflow
