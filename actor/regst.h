#ifndef ACTORFLOW_ACTOR_REGST_H_
#define ACTORFLOW_ACTOR_REGST_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "memory/synced_memory.h"

namespace actorflow {

class Actor;
class RegstDesc;
struct ActorMsg;
template <typename Msg>
class Thread;

// One buffer of a RegstDesc. Free: only its producer may write it. In use:
// sent to every consumer, who read it and return it; it is free again when
// the last one has. Only the producer's thread touches `reading_cnt`, since
// returns arrive there (as messages, or as direct calls from consumers on
// that thread); consumers only read the payload.
class Regst {
 public:
  Regst(const RegstDesc* desc, std::unique_ptr<SyncedMemory> memory,
        float* data)
      : desc_(desc), memory_(std::move(memory)), data_(data) {}

  const RegstDesc& desc() const { return *desc_; }
  int64_t piece_id() const { return piece_id_; }
  void set_piece_id(int64_t piece_id) { piece_id_ = piece_id; }

  // elem_cnt floats in the descriptor's memory case (host memory for CPU);
  // null for a control token.
  float* data() const { return data_; }
  int64_t elem_cnt() const;
  SyncedMemory& memory() const { return *memory_; }

  int32_t reading_cnt = 0;  // producer thread only

 private:
  const RegstDesc* desc_;
  std::unique_ptr<SyncedMemory> memory_;
  float* data_;
  int64_t piece_id_ = -1;
};

// Where a produced descriptor's registers go: one entry per consumer.
struct RegstConsumer {
  int32_t actor = 0;    // dense actor index
  int16_t in_slot = 0;  // that actor's input slot for this descriptor
  Thread<ActorMsg>* thread = nullptr;  // the actor's thread
  // Set on the consumer's thread when it is constructed; a producer on that
  // same thread hands registers over by calling it directly.
  Actor* actor_ptr = nullptr;
};

// The runtime form of a RegstDescProto, with its registers allocated once.
class RegstDesc {
 public:
  int64_t id = 0;
  int64_t elem_cnt = 0;
  int32_t register_num = 1;
  int32_t producer = 0;  // dense actor index
  int16_t producer_out_slot = 0;
  Thread<ActorMsg>* producer_thread = nullptr;
  // Set on the producer's thread when it is constructed; consumers on that
  // same thread hand registers back by calling it directly.
  Actor* producer_actor = nullptr;
  std::vector<RegstConsumer> consumers;
  std::vector<std::unique_ptr<Regst>> regsts;
};

inline int64_t Regst::elem_cnt() const { return desc_->elem_cnt; }

}  // namespace actorflow

#endif  // ACTORFLOW_ACTOR_REGST_H_
