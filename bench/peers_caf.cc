// The peer suite's workloads in the C++ Actor Framework (Debian's
// libcaf-dev, 0.17): event-based actors on a scheduler of the suite's
// thread count. Each measurement gets its own actor system (its threads are
// started before and joined after the timed part). The in-flight cap is
// credit: the source sends only while it holds credit, which the last
// actor returns.
#include <caf/all.hpp>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "bench/peer_workloads.h"

namespace actorflow::internal::bench::caf_peer {
namespace {

using credit_atom = caf::atom_constant<caf::atom("credit")>;
using start_atom = caf::atom_constant<caf::atom("start")>;
using done_atom = caf::atom_constant<caf::atom("done")>;

caf::actor_system_config Config(int threads) {
  caf::actor_system_config config;
  config.set("scheduler.max-threads", static_cast<size_t>(threads));
  return config;
}

// Sends one `stage` item per credit, spinning `iters` for each; the first
// credit message also says where credit will come from (nothing to do).
caf::behavior Source(caf::event_based_actor* self, std::vector<caf::actor> next,
                     int64_t items, int64_t iters) {
  auto sent = std::make_shared<int64_t>(0);
  return {[=](credit_atom) {
    if (*sent == items) return;
    BusyWork::Spin(iters);
    for (const caf::actor& to : next) self->send(to, *sent);
    ++*sent;
  }};
}

caf::behavior Stage(caf::event_based_actor* self, caf::actor next,
                    int64_t iters) {
  return {[=](int64_t x) {
    BusyWork::Spin(iters);
    self->send(next, x);
  }};
}

// Counts each item until `need` copies arrived (1 for a line, the branch
// count for a join), returns a credit to `source` for it, and tells
// `waiter` once `items` items are complete.
struct SinkState {
  std::unordered_map<int64_t, int> copies;
  int64_t done = 0;
  caf::actor source;
};
caf::behavior Sink(caf::event_based_actor* self, caf::actor waiter,
                   int64_t items, int need, int64_t iters) {
  auto state = std::make_shared<SinkState>();
  return {
      [=](caf::actor source) { state->source = source; },
      [=](int64_t x) {
        BusyWork::Spin(iters);
        if (need > 1 && ++state->copies[x] < need) return;
        if (need > 1) state->copies.erase(x);
        if (++state->done == items) {
          self->send(waiter, done_atom::value);
        } else {
          self->send(state->source, credit_atom::value);
        }
      },
  };
}

void StopAll(const std::vector<caf::actor>& actors) {
  for (const caf::actor& a : actors) {
    caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
}

// Starts a credit-driven graph (the sink told the source's handle, `cap`
// credits to the source) and waits until the sink reports.
Cost RunCredited(caf::actor_system& system, caf::scoped_actor& waiter,
                 const caf::actor& source, const caf::actor& sink, int cap,
                 double units) {
  return Measure(units, [&] {
    waiter->send(sink, source);
    for (int i = 0; i < cap; ++i) waiter->send(source, credit_atom::value);
    waiter->receive([](done_atom) {});
  });
}

}  // namespace

Cost Pipeline(const PipelineSpec& spec) {
  caf::actor_system_config config = Config(spec.threads);
  caf::actor_system system{config};
  caf::scoped_actor waiter{system};
  std::vector<caf::actor> actors;
  caf::actor sink =
      system.spawn(Sink, caf::actor{waiter}, spec.items, 1, spec.work_iters);
  actors.push_back(sink);
  caf::actor next = sink;
  for (int i = spec.stages - 2; i >= 1; --i) {
    next = system.spawn(Stage, next, spec.work_iters);
    actors.push_back(next);
  }
  caf::actor source = system.spawn(Source, std::vector<caf::actor>{next},
                                   spec.items, spec.work_iters);
  actors.push_back(source);
  Cost cost = RunCredited(system, waiter, source, sink, spec.cap,
                          static_cast<double>(spec.items) * spec.stages);
  StopAll(actors);
  return cost;
}

Cost Fan(const FanSpec& spec) {
  caf::actor_system_config config = Config(spec.threads);
  caf::actor_system system{config};
  caf::scoped_actor waiter{system};
  std::vector<caf::actor> actors;
  caf::actor join =
      system.spawn(Sink, caf::actor{waiter}, spec.items, spec.branches, 0);
  actors.push_back(join);
  std::vector<caf::actor> branches;
  for (int b = 0; b < spec.branches; ++b) {
    branches.push_back(system.spawn(Stage, join, spec.work_iters));
    actors.push_back(branches.back());
  }
  caf::actor source = system.spawn(Source, branches, spec.items, 0);
  actors.push_back(source);
  Cost cost = RunCredited(system, waiter, source, join, spec.cap,
                          static_cast<double>(spec.items) * spec.branches);
  StopAll(actors);
  return cost;
}

std::vector<double> PingPong(const PingPongSpec& spec, int threads) {
  caf::actor_system_config config = Config(threads);
  caf::actor_system system{config};
  caf::scoped_actor waiter{system};
  auto stamps = std::make_shared<std::vector<int64_t>>();
  stamps->reserve(spec.rounds + 1);
  caf::actor pong = system.spawn([](caf::event_based_actor*) -> caf::behavior {
    return {[](int64_t x) { return x; }};
  });
  const int64_t rounds = spec.rounds;
  caf::actor waiting{waiter};
  caf::actor ping =
      system.spawn([=](caf::event_based_actor* self) -> caf::behavior {
        return {
            [=](start_atom) {
              stamps->push_back(NowNs());
              self->send(pong, int64_t{0});
            },
            [=](int64_t x) {
              stamps->push_back(NowNs());
              if (x + 1 == rounds) {
                self->send(waiting, done_atom::value);
              } else {
                self->send(pong, x + 1);
              }
            },
        };
      });
  waiter->send(ping, start_atom::value);
  waiter->receive([](done_atom) {});
  StopAll({ping, pong});
  std::vector<double> rtt;
  for (size_t i = 1; i < stamps->size(); ++i) {
    rtt.push_back((*stamps)[i] - (*stamps)[i - 1]);
  }
  return rtt;
}

// Each producer sends all its items in one go; the consumer's mailbox holds
// whatever it has not yet taken.
Cost Overload(const OverloadSpec& spec) {
  caf::actor_system_config config = Config(spec.threads);
  caf::actor_system system{config};
  caf::scoped_actor waiter{system};
  caf::actor waiting{waiter};
  const int64_t total = 2 * spec.items;
  const int64_t iters = spec.work_iters;
  caf::actor consumer =
      system.spawn([=](caf::event_based_actor* self) -> caf::behavior {
        auto taken = std::make_shared<int64_t>(0);
        return {[=](const std::vector<float>&) {
          BusyWork::Spin(iters);
          if (++*taken == total) self->send(waiting, done_atom::value);
        }};
      });
  const int64_t items = spec.items;
  const int floats = spec.payload_floats;
  std::vector<caf::actor> producers;
  for (int p = 0; p < 2; ++p) {
    producers.push_back(
        system.spawn([=](caf::event_based_actor* self) -> caf::behavior {
          return {[=](start_atom) {
            for (int64_t i = 0; i < items; ++i) {
              self->send(consumer,
                         std::vector<float>(floats, static_cast<float>(i)));
            }
          }};
        }));
  }
  Cost cost = Measure(static_cast<double>(total), [&] {
    for (const caf::actor& p : producers) waiter->send(p, start_atom::value);
    waiter->receive([](done_atom) {});
  });
  producers.push_back(consumer);
  StopAll(producers);
  return cost;
}

}  // namespace actorflow::internal::bench::caf_peer
