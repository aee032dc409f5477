#ifndef ACTORFLOW_REGISTER_VIEW_H_
#define ACTORFLOW_REGISTER_VIEW_H_

#include <cstdint>

#include "absl/strings/string_view.h"
#include "actorflow/tensor_view.h"
#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// The part of a register that views read: its blobs and its piece. Plain
// data with a fixed layout, part of ACTORFLOW_ABI_VERSION
// (actorflow/version.h): the runtime's register derives from it and keeps
// its memory and bookkeeping in its own fields, which kernels never see.
class RegisterBlobs {
 public:
  int64_t piece_id() const { return *piece_id_; }
  int64_t regst_desc_id() const { return regst_desc_id_; }
  int num_blobs() const { return num_blobs_; }
  Blob& blob(int i) { return blobs_[i]; }
  const Blob& blob(int i) const { return blobs_[i]; }
  // Null when there is no blob of that name.
  Blob* FindBlob(absl::string_view name);

 protected:
  RegisterBlobs() = default;
  ~RegisterBlobs() = default;

  // Both point into the derived class: num_blobs_ blobs, and the piece id,
  // which the producer writes on every act (where it lives is the
  // derived class's choice).
  Blob* blobs_ = nullptr;
  const int64_t* piece_id_ = nullptr;
  int32_t num_blobs_ = 0;
  int64_t regst_desc_id_ = 0;
};

// What a kernel sees of a register it reads: the piece and read-only blobs.
class ConstRegisterView {
 public:
  ConstRegisterView() = default;
  explicit ConstRegisterView(RegisterBlobs* reg) : register_(reg) {}

  // False for a register that does not exist (a name the task lacks).
  bool valid() const { return register_ != nullptr; }
  int64_t piece_id() const { return register_->piece_id(); }
  int64_t regst_desc_id() const { return register_->regst_desc_id(); }
  int num_blobs() const { return register_ ? register_->num_blobs() : 0; }
  // Out-of-range indices and unknown names give an empty view, whose typed
  // accessors return an error.
  ConstTensorView blob(int i) const { return ConstTensorView(Get(i)); }
  ConstTensorView blob(absl::string_view name) const {
    return ConstTensorView(register_ ? register_->FindBlob(name) : nullptr);
  }

 protected:
  Blob* Get(int i) const {
    return register_ != nullptr &&
                   static_cast<unsigned>(i) <
                       static_cast<unsigned>(register_->num_blobs())
               ? &register_->blob(i)
               : nullptr;
  }
  RegisterBlobs* register_ = nullptr;
};

// What a kernel sees of a register it produces: writable blobs.
class RegisterView : public ConstRegisterView {
 public:
  RegisterView() = default;
  explicit RegisterView(RegisterBlobs* reg) : ConstRegisterView(reg) {}

  TensorView blob(int i) const { return TensorView(Get(i)); }
  TensorView blob(absl::string_view name) const {
    return TensorView(register_ ? register_->FindBlob(name) : nullptr);
  }
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_REGISTER_VIEW_H_
