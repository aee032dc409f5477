#ifndef ACTORFLOW_ACTOR_ACTOR_MSG_BUS_H_
#define ACTORFLOW_ACTOR_ACTOR_MSG_BUS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "actor/actor_msg.h"
#include "thread/thread.h"

namespace actorflow::internal {

// Routes a message to the thread of its destination actor. Actor ids are
// dense, so this is an array lookup; the thread then takes its local queue
// when the sender runs on it and its channel otherwise. (Other machines'
// actors will get a transport here.)
class ActorMsgBus {
 public:
  explicit ActorMsgBus(std::vector<Thread<ActorMsg>*> thread_of_actor)
      : thread_of_actor_(std::move(thread_of_actor)) {}

  absl::Status Send(const ActorMsg& msg) const {
    return thread_of_actor_[msg.dst]->Send(msg);
  }

  int num_actors() const { return static_cast<int>(thread_of_actor_.size()); }

 private:
  const std::vector<Thread<ActorMsg>*> thread_of_actor_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_ACTOR_MSG_BUS_H_
