#ifndef ACTORFLOW_ACTOR_MAKE_ACTOR_H_
#define ACTORFLOW_ACTOR_MAKE_ACTOR_H_

#include <memory>

#include "actor/actor.h"

namespace actorflow::internal {

// The actor of `spec`, of the type its mode calls for (see Actor): a feed
// or fetch port makes a boundary actor; otherwise a kernel actor, on an
// asynchronous stream when the spec names one, and a source when it has no
// inputs. On the actor's own thread.
std::unique_ptr<Actor> MakeActor(ActorSpec spec, ActorEnv env);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_MAKE_ACTOR_H_
