#ifndef ACTORFLOW_ACTOR_ACTOR_H_
#define ACTORFLOW_ACTOR_ACTOR_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "actor/actor_msg.h"
#include "actor/actor_msg_bus.h"
#include "actor/kernel.h"
#include "actor/regst.h"
#include "actor/run_monitor.h"
#include "proto/plan.pb.h"
#include "thread/ring_queue.h"
#include "thread/stream_key.h"

namespace actorflow {

// Everything an actor is built from, prepared when the plan is loaded.
struct ActorSpec {
  int32_t index = 0;
  const TaskProto* task = nullptr;
  StreamKey stream;
  std::unique_ptr<Kernel> kernel;
  // Consumed descriptors by name (names sorted), each name's ids in order.
  std::vector<std::pair<std::string, std::vector<RegstDesc*>>> inputs;
  // Produced descriptors by name (sorted).
  std::vector<std::pair<std::string, RegstDesc*>> outputs;
};

// What the actors of one run share.
struct ActorEnv {
  const ActorMsgBus* bus = nullptr;
  RunMonitor* monitor = nullptr;
  int64_t total_piece_num = 0;
};

// One task at run time. Lives on its stream's thread and is only touched
// there. It acts exactly when every input slot holds a ready register and
// every output slot a free one; after acting it sends each produced
// register to all its consumers and returns each consumed one to its
// producer.
//
// Life cycle: kActing until no more pieces can come (a source has made its
// last piece; an input has ended and is empty; the run is aborting or this
// actor failed). Then it sends EORD on every output and becomes a zombie:
// it returns anything still arriving unread and waits until every input has
// ended and every register it produced has come back. Then it is finished
// and tells the RunMonitor, once.
class Actor {
 public:
  Actor(ActorSpec spec, ActorEnv env);
  Actor(const Actor&) = delete;
  Actor& operator=(const Actor&) = delete;

  void ProcessMsg(const ActorMsg& msg);

  const TaskProto& task() const { return *task_; }
  const Kernel& kernel() const { return *kernel_; }
  int64_t act_count() const { return act_count_; }
  bool finished() const { return state_ == State::kFinished; }

 private:
  enum class State { kActing, kZombie, kFinished };

  struct InSlot {
    RegstDesc* desc = nullptr;
    RingQueue<Regst*> ready;
    bool ended = false;  // EORD received
  };
  struct OutSlot {
    RegstDesc* desc = nullptr;
    RingQueue<Regst*> free;
  };

  bool is_source() const { return in_.empty(); }
  bool CanAct() const;
  void Act();
  void MaybeEnd();
  void EnterZombie();
  void Publish(Regst* regst);
  void ReturnToProducer(Regst* regst);
  void Send(const ActorMsg& msg) {
    absl::Status status = env_.bus->Send(msg);
    if (__builtin_expect(!status.ok(), 0)) ReportLostMessage(msg, status);
  }
  void ReportLostMessage(const ActorMsg& msg, const absl::Status& status);
  void Fail(const absl::Status& status, int64_t piece_id);

  const int32_t index_;
  const TaskProto* const task_;
  std::unique_ptr<Kernel> kernel_;
  const ActorEnv env_;

  std::vector<InSlot> in_;
  std::vector<OutSlot> out_;
  // Counters that make CanAct O(1).
  size_t nonempty_in_ = 0;
  size_t nonempty_out_ = 0;  // output slots with a free register
  int64_t free_regsts_ = 0;
  int64_t total_regsts_ = 0;
  size_t ended_in_ = 0;

  State state_ = State::kActing;
  bool started_ = false;  // sources: kStart received
  bool failed_ = false;
  int64_t next_piece_ = 0;  // sources
  int64_t act_count_ = 0;
  KernelContext ctx_;
};

}  // namespace actorflow

#endif  // ACTORFLOW_ACTOR_ACTOR_H_
