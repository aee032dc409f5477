#include "actor/make_actor.h"

#include "actor/boundary_actors.h"
#include "actor/kernel_actor.h"
#include "actor/source_actor.h"
#include "actor/stream_actor.h"

namespace actorflow::internal {

std::unique_ptr<Actor> MakeActor(ActorSpec spec, ActorEnv env) {
  if (spec.feed_port != nullptr) return std::make_unique<FeedActor>(spec, env);
  if (spec.fetch_port != nullptr) {
    return std::make_unique<FetchActor>(spec, env);
  }
  const bool source = spec.inputs.empty();
  if (spec.async_thread != nullptr) {
    if (source) return std::make_unique<SourceActor<StreamActor>>(spec, env);
    return std::make_unique<StreamActor>(spec, env);
  }
  if (source) return std::make_unique<SourceActor<KernelActor>>(spec, env);
  return std::make_unique<KernelActor>(spec, env);
}

}  // namespace actorflow::internal
