#ifndef ACTORFLOW_ACTOR_BOUNDARY_ACTORS_H_
#define ACTORFLOW_ACTOR_BOUNDARY_ACTORS_H_

#include <cstdint>

#include "actor/actor.h"
#include "actor/feed_port.h"
#include "actor/fetch_port.h"

namespace actorflow::internal {

// The boundary tasks `feed` and `fetch` (see Session): they move registers
// between the plan and the caller instead of calling a kernel, and wait on
// the caller, which is in neither column of TaskStats.

// Publishes what the caller submitted to its FeedPort, as the run's next
// pieces, and hands the caller every register that comes back free. Its
// run ends when the caller closes the port and it is drained, not at a
// piece count.
class FeedActor final : public Actor {
 public:
  FeedActor(ActorSpec& spec, ActorEnv env)
      : Actor(spec, env), port_(spec.feed_port) {}

 private:
  void Drive() override;
  void OnReset() override { piece_end_ = INT64_MAX; }
  bool WaitsOnCaller() const override { return true; }

  FeedPort* const port_;
};

// Hands every register it receives to its FetchPort; the caller's release
// returns it to the producer.
class FetchActor final : public Actor {
 public:
  FetchActor(ActorSpec& spec, ActorEnv env)
      : Actor(spec, env), port_(spec.fetch_port) {}

 private:
  void Drive() override;
  void EndOutputs() override {
    SendEords();
    port_->End();
  }
  bool WaitsOnCaller() const override { return true; }

  FetchPort* const port_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_ACTOR_BOUNDARY_ACTORS_H_
