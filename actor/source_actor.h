#ifndef ACTORFLOW_ACTOR_SOURCE_ACTOR_H_
#define ACTORFLOW_ACTOR_SOURCE_ACTOR_H_

#include "actor/actor.h"

namespace actorflow::internal {

// A kernel actor without inputs (KernelActor or StreamActor as `Base`): it
// makes the run's pieces itself, from kStart, counting from where the last
// run (or a restored checkpoint) stopped, until the run's piece count. Its
// acts wait only for free output registers (and its kernel's gate).
template <class Base>
class SourceActor final : public Base {
 public:
  SourceActor(ActorSpec& spec, ActorEnv env) : Base(spec, env) {}

 private:
  void Drive() override {
    while (this->Unblocked() && this->started_ &&
           this->next_piece_ < this->piece_end_ &&
           !this->env_.monitor->holding() && this->GateOpen()) {
      if (!this->Act(this->next_piece_)) break;
      ++this->next_piece_;
    }
    this->supply_ended_ =
        this->started_ && this->next_piece_ >= this->piece_end_;
  }
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_SOURCE_ACTOR_H_
