#ifndef ACTORFLOW_PIPELINE_PIPELINE_HELD_H_
#define ACTORFLOW_PIPELINE_PIPELINE_HELD_H_

// The batches a Pipeline holds (pipeline.cc, pipeline_checkpoint.cc).
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "actor/blob_init.h"
#include "actorflow/pipeline.h"
#include "actorflow/session.h"
#include "pipeline/stage_kernels.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// A tensor in the pipeline's own memory, seen through the same views as a
// register's blob.
struct Pipeline::OwnedTensor {
  OwnedTensor(const std::string& name, DataType type,
              absl::Span<const int64_t> max_shape,
              absl::Span<const int64_t> shape, const void* data, size_t bytes)
      : storage((bytes + 7) / 8), current_shape(max_shape.size()) {
    desc.name = name;
    desc.data_type = type;
    desc.shape.assign(max_shape.begin(), max_shape.end());
    desc.is_dynamic = true;
    InitBlob(&desc, 0, reinterpret_cast<char*>(storage.data()),
             current_shape.data(), &blob);
    SetBlobShape(shape, &blob);
    if (bytes > 0) std::memcpy(blob.data, data, bytes);
  }
  OwnedTensor(const OwnedTensor&) = delete;
  OwnedTensor& operator=(const OwnedTensor&) = delete;
  ConstTensorView view() const {
    return ConstTensorView(const_cast<Blob*>(&blob));
  }

  BlobDesc desc;
  Blob blob;
  std::vector<uint64_t> storage;       // 8-byte aligned for every element type
  std::vector<int64_t> current_shape;  // what blob.shape points to
};

// A batch: borrowed from the plan (data, shapes), or in the pipeline's own
// memory (owned_data, owned_shapes); one entry per output either way.
struct Pipeline::Held {
  int64_t epoch = 0;
  int64_t index = 0;
  std::vector<FetchedTensor> data;
  std::vector<FetchedTensor> shapes;
  std::vector<std::unique_ptr<OwnedTensor>> owned_data;
  std::vector<std::unique_ptr<OwnedTensor>> owned_shapes;

  bool owned() const { return !owned_data.empty(); }
  ConstTensorView data_view(size_t k) const {
    return owned() ? owned_data[k]->view() : data[k].view();
  }
  ConstTensorView shapes_view(size_t k) const {
    return owned() ? owned_shapes[k]->view() : shapes[k].view();
  }
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_PIPELINE_PIPELINE_HELD_H_
