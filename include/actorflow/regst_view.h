#ifndef ACTORFLOW_REGST_VIEW_H_
#define ACTORFLOW_REGST_VIEW_H_

#include <cstdint>
#include <vector>

#include "absl/strings/string_view.h"
#include "actorflow/tensor_view.h"

namespace actorflow {

class RegstDesc;  // the runtime's (actor/regst.h)

// The part of a register that views read: its blobs and its piece. The
// runtime's Regst (actor/regst.h) extends it with its memory and
// bookkeeping; kernels see only the views below, and this header needs
// nothing of the runtime.
//
// piece_id_ and reading_cnt_ are written by the producer on every act: they
// sit on a cache line of their own, so that the line consumers read (the
// blobs) stays cached on both sides.
class RegstBlobs {
 public:
  int64_t piece_id() const { return piece_id_; }
  int64_t regst_desc_id() const { return regst_desc_id_; }
  int num_blobs() const { return num_blobs_; }
  Blob& blob(int i) { return blobs_[i]; }
  const Blob& blob(int i) const { return blobs_[i]; }
  // Null when there is no blob of that name.
  Blob* FindBlob(absl::string_view name) {
    for (Blob& blob : blobs_) {
      if (blob.desc->name == name) return &blob;
    }
    return nullptr;
  }

 protected:
  RegstBlobs() = default;
  ~RegstBlobs() = default;

  std::vector<Blob> blobs_;
  int num_blobs_ = 0;  // blobs_.size(), read on every act
  int64_t regst_desc_id_ = 0;
  const RegstDesc* desc_ = nullptr;  // Regst::desc(); opaque here
  alignas(64) int64_t piece_id_ = -1;
  int32_t reading_cnt_ = 0;  // Regst's bookkeeping, the producer's alone
};

// What a kernel sees of a register it reads: the piece and read-only blobs.
class ConstRegstView {
 public:
  ConstRegstView() = default;
  explicit ConstRegstView(RegstBlobs* regst) : regst_(regst) {}

  // False for a register that does not exist (a name the task lacks).
  bool valid() const { return regst_ != nullptr; }
  int64_t piece_id() const { return regst_->piece_id(); }
  int64_t regst_desc_id() const { return regst_->regst_desc_id(); }
  int num_blobs() const { return regst_ ? regst_->num_blobs() : 0; }
  // Out-of-range indices and unknown names give an empty view, whose typed
  // accessors return an error.
  ConstTensorView blob(int i) const { return ConstTensorView(Get(i)); }
  ConstTensorView blob(absl::string_view name) const {
    return ConstTensorView(regst_ ? regst_->FindBlob(name) : nullptr);
  }

 protected:
  Blob* Get(int i) const {
    return regst_ != nullptr && static_cast<unsigned>(i) <
                                    static_cast<unsigned>(regst_->num_blobs())
               ? &regst_->blob(i)
               : nullptr;
  }
  RegstBlobs* regst_ = nullptr;
};

// What a kernel sees of a register it produces: writable blobs.
class RegstView : public ConstRegstView {
 public:
  RegstView() = default;
  explicit RegstView(RegstBlobs* regst) : ConstRegstView(regst) {}

  TensorView blob(int i) const { return TensorView(Get(i)); }
  TensorView blob(absl::string_view name) const {
    return TensorView(regst_ ? regst_->FindBlob(name) : nullptr);
  }
};

}  // namespace actorflow

#endif  // ACTORFLOW_REGST_VIEW_H_
