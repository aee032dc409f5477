#ifndef ACTORFLOW_ACTOR_THREAD_ACTORS_H_
#define ACTORFLOW_ACTOR_THREAD_ACTORS_H_

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "actor/actor.h"
#include "actor/actor_msg.h"
#include "thread/thread.h"

namespace actorflow::internal {

// The actors one thread owns, and the handler of that thread's messages:
// a message to an actor goes from the thread's loop straight to the actor,
// with no stop anywhere else. The commands that concern the whole session
// (construct an actor, describe it for a hang report, save or restore its
// kernel's state) go to `session`, on this same thread.
//
// Invariant: actor `id` is adopted, and later reached, only on this
// thread; the table is sized before the thread starts and never grows.
class ThreadActors final : public MsgHandler<ActorMsg> {
 public:
  // Actors are numbered 0..num_actors-1 across the session.
  ThreadActors(int32_t num_actors, MsgHandler<ActorMsg>* session)
      : session_(session), actors_(num_actors) {}
  ThreadActors(const ThreadActors&) = delete;
  ThreadActors& operator=(const ThreadActors&) = delete;

  // Takes ownership of actor `id`; on this thread only (kConstruct).
  Actor* Adopt(int32_t id, std::unique_ptr<Actor> actor) {
    actors_[id] = actor.get();
    owned_.push_back(std::move(actor));
    return actors_[id];
  }

  void Handle(const ActorMsg& msg) override {
    if (__builtin_expect(msg.kind == ActorMsgKind::kCmd, 0) &&
        IsSessionCmd(msg.cmd)) {
      session_->Handle(msg);
      return;
    }
    actors_[msg.dst]->ProcessMsg(msg);
  }

 private:
  MsgHandler<ActorMsg>* const session_;
  std::vector<Actor*> actors_;  // by session-wide id; null: another thread's
  std::vector<std::unique_ptr<Actor>> owned_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_THREAD_ACTORS_H_
