#include "actorflow/tensor_view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "actor/blob_init.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN
namespace {

std::string BlobLabel(const Blob& blob) {
  return absl::StrCat("blob '", blob.desc->name, "' (regst_desc ",
                      blob.regst_desc_id, ")");
}

}  // namespace

void InitBlob(const BlobDesc* desc, int64_t regst_desc_id, char* data,
              int64_t* shape, Blob* blob) {
  blob->data = data;
  blob->shape = shape;
  blob->max_shape = desc->shape.data();
  blob->regst_desc_id = regst_desc_id;
  blob->desc = desc;
  blob->rank = static_cast<int32_t>(desc->shape.size());
  blob->elem_size = static_cast<int32_t>(DataTypeSize(desc->data_type));
  blob->data_type = desc->data_type;
  blob->is_dynamic = desc->is_dynamic;
  ResetBlobShape(blob);
}

void SetBlobShape(absl::Span<const int64_t> shape, Blob* blob) {
  std::copy(shape.begin(), shape.end(), blob->shape);
  blob->elem_cnt = ShapeElemCnt(shape);
}

const std::string& ConstTensorView::name() const { return blob_->desc->name; }

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
  SetBlobShape(shape, blob_);
  return absl::OkStatus();
}

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow
