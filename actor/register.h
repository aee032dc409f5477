#ifndef ACTORFLOW_ACTOR_REGISTER_H_
#define ACTORFLOW_ACTOR_REGISTER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/types/span.h"
#include "actor/blob_init.h"
#include "actor/register_layout.h"
#include "actor/shared_block.h"
#include "actorflow/blob_desc.h"
#include "actorflow/register_view.h"
#include "actorflow/tensor_view.h"
#include "memory/synced_memory.h"

namespace actorflow::internal {

class Actor;
class RegisterDesc;
struct ActorMsg;
template <typename Msg>
class Thread;

// One buffer of a RegisterDesc: its blobs in one allocation. Free: only its
// producer may write it. In use: sent to every consumer, who read it and
// return it; it is free again when the last one has. Only the producer's
// thread touches the reading count, since returns arrive there (as
// messages, or as direct calls from consumers on that thread); consumers
// only read the payload. Kernels never see this class: they get RegisterViews.
//
// What the producer writes on every act (piece id, reading count) sits on a
// cache line of its own, and the runtime's consumers learn the piece id
// from the message: the line they do read (the base's pointers, the
// descriptor) then stays cached on both sides instead of moving between
// threads on every hop.
class Register : public RegisterBlobs {
 public:
  // `base`: the register's memory (null when it has no bytes).
  Register(const RegisterDesc* desc, std::shared_ptr<SyncedMemory> memory,
           char* base);
  // The base points into this object: never copied or moved.
  Register(const Register&) = delete;
  Register& operator=(const Register&) = delete;

  const RegisterDesc& desc() const { return *desc_; }
  // The start of its memory (the constructor's `base`), found from its
  // first blob; null when it has no blobs.
  char* base() const;
  void set_piece_id(int64_t piece_id) { piece_id_value_ = piece_id; }
  // Dynamic blobs back to their maximum shape: before each act that
  // produces this register.
  void ResetShapes();
  SyncedMemory& memory() const { return *memory_; }
  // Null for a register without bytes.
  const std::shared_ptr<SyncedMemory>& memory_ptr() const { return memory_; }

  // Puts `memory` (at least as large, its host buffer at `base`) in place
  // of the register's own and returns the old, whose bytes the caller may
  // then keep: the blobs point into the new memory from now on. Only while
  // no actor can touch the register (a fetched register the caller holds),
  // and only for memory no other register shares.
  std::shared_ptr<SyncedMemory> SwapMemory(std::shared_ptr<SyncedMemory> memory,
                                           char* base);

  // Producer thread only.
  void set_reading_cnt(int32_t n) { reading_cnt_ = n; }
  // Counts one reader done; true when it was the last.
  bool ReadingDone() { return --reading_cnt_ == 0; }

 private:
  const RegisterDesc* desc_ = nullptr;
  // Shared by the registers of one SharedBlock; otherwise this one's. Only
  // owned, never read while acting.
  std::shared_ptr<SyncedMemory> memory_;
  // What the base's blobs_ and the blobs' shapes point into when there is
  // more than one blob or a rank above kInlineRank (owned only); otherwise
  // inline_blob_ and inline_shape_, so that a kernel reaches its blob
  // without another cache miss.
  std::unique_ptr<Blob[]> blob_storage_;
  std::unique_ptr<int64_t[]> shape_storage_;
  static constexpr int kInlineRank = 4;
  Blob inline_blob_;
  int64_t inline_shape_[kInlineRank] = {};
  // The producer's line.
  alignas(64) int64_t piece_id_value_ = -1;
  int32_t reading_cnt_ = 0;
};

// What consumers read (the base, its first blob and shape), then on a line
// of its own what the producer writes per act.
static_assert(sizeof(Register) <= 256, "Register grew past four cache lines");

// The Register behind a kernel context's pointer: every RegisterBlobs the
// runtime makes is a Register.
inline Register* AsRegister(RegisterBlobs* reg) {
  return static_cast<Register*>(reg);
}

// Where a produced descriptor's registers go: one entry per consumer.
struct RegisterConsumer {
  int32_t actor = 0;    // dense actor index
  int16_t in_slot = 0;  // that actor's input slot for this descriptor
  Thread<ActorMsg>* thread = nullptr;  // the actor's thread
  // Set on the consumer's thread when it is constructed; a producer on that
  // same thread hands registers over by calling it directly.
  Actor* actor_ptr = nullptr;
};

// The runtime form of a RegisterDescProto, with its registers allocated once.
class RegisterDesc {
 public:
  int64_t id = 0;
  std::vector<BlobDesc> blobs;  // stated or inferred
  RegisterLayout layout;
  bool has_dynamic_blob = false;
  int32_t register_num = 1;
  // Published once before the producer's first act of each run
  // (RegisterDescProto.initial_register).
  bool initial_register = false;
  int32_t producer = 0;  // dense actor index
  int16_t producer_out_slot = 0;
  Thread<ActorMsg>* producer_thread = nullptr;
  // Set on the producer's thread when it is constructed; consumers on that
  // same thread hand registers back by calling it directly.
  Actor* producer_actor = nullptr;
  std::vector<RegisterConsumer> consumers;
  std::vector<std::unique_ptr<Register>> registers;
  // Its shared allocation, when the session checks memory sharing
  // (SessionOptions::check_memory_sharing); null otherwise.
  SharedBlock* checked_block = nullptr;
};

inline char* Register::base() const {
  return num_blobs() == 0 ? nullptr : blob(0).data - desc().layout.offsets[0];
}

inline Register::Register(const RegisterDesc* desc,
                          std::shared_ptr<SyncedMemory> memory, char* base)
    : desc_(desc), memory_(std::move(memory)) {
  regst_desc_id_ = desc->id;
  piece_id_ = &piece_id_value_;
  const size_t num_blobs = desc->blobs.size();
  size_t rank_total = 0;
  for (const BlobDesc& blob : desc->blobs) rank_total += blob.shape.size();
  Blob* blobs = &inline_blob_;
  int64_t* shape = inline_shape_;
  if (num_blobs > 1 || rank_total > kInlineRank) {
    blob_storage_ = std::make_unique<Blob[]>(num_blobs);
    shape_storage_ = std::make_unique<int64_t[]>(rank_total);
    blobs = blob_storage_.get();
    shape = shape_storage_.get();
  }
  for (size_t b = 0; b < num_blobs; ++b) {
    const BlobDesc& blob = desc->blobs[b];
    InitBlob(&blob, desc->id,
             base == nullptr ? nullptr : base + desc->layout.offsets[b], shape,
             &blobs[b]);
    shape += blob.shape.size();
  }
  blobs_ = blobs;
  num_blobs_ = static_cast<int32_t>(num_blobs);
}

inline std::shared_ptr<SyncedMemory> Register::SwapMemory(
    std::shared_ptr<SyncedMemory> memory, char* base) {
  for (int b = 0; b < num_blobs_; ++b) {
    blobs_[b].data = base + desc_->layout.offsets[b];
  }
  memory_.swap(memory);
  return memory;
}

inline void Register::ResetShapes() {
  for (int b = 0; b < num_blobs_; ++b) {
    if (blobs_[b].is_dynamic) ResetBlobShape(&blobs_[b]);
  }
}

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_REGISTER_H_
