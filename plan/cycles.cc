#include "plan/cycles.h"

#include <algorithm>
#include <set>
#include <unordered_map>

namespace actorflow::internal {

std::vector<std::vector<int>> CyclesAmongUnordered(
    const std::vector<std::vector<int>>& predecessors,
    const std::vector<bool>& ordered) {
  std::vector<std::vector<int>> cycles;
  std::set<int> reported;  // smallest nodes of the cycles found
  const int n = static_cast<int>(ordered.size());
  for (int start = 0; start < n; ++start) {
    if (ordered[start]) continue;
    std::vector<int> walk;
    std::unordered_map<int, size_t> position;
    int node = start;
    while (!position.count(node)) {
      position[node] = walk.size();
      walk.push_back(node);
      for (int pred : predecessors[node]) {
        if (!ordered[pred]) {
          node = pred;
          break;
        }
      }
    }
    std::vector<int> cycle(walk.begin() + position[node], walk.end());
    std::reverse(cycle.begin(), cycle.end());
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()),
                cycle.end());
    if (reported.insert(cycle.front()).second) cycles.push_back(cycle);
  }
  return cycles;
}

}  // namespace actorflow::internal
