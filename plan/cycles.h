#ifndef ACTORFLOW_PLAN_CYCLES_H_
#define ACTORFLOW_PLAN_CYCLES_H_

#include <vector>

namespace actorflow::internal {

// The cycles among the nodes a topological sort left unordered (on a cycle,
// or behind one). Every unordered node has an unordered predecessor, so
// walking unordered predecessors from one comes back to a node already
// walked: the loop is a cycle, and a node that only waits behind it is never
// part of it. Each cycle is listed in edge direction from its smallest node;
// one found again (the same smallest node) is listed once.
// `predecessors[v]`: the nodes with an edge into v.
std::vector<std::vector<int>> CyclesAmongUnordered(
    const std::vector<std::vector<int>>& predecessors,
    const std::vector<bool>& ordered);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_PLAN_CYCLES_H_
