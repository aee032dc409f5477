#include "runtime/piece_cost.h"

#include <algorithm>
#include <array>
#include <numeric>

namespace actorflow::internal {

std::optional<int64_t> EstimatedActNs(std::string_view op_type, int64_t bytes) {
  // Kernels that touch each byte once or twice, with no other work.
  static constexpr std::array<std::string_view, 7> kByteBound = {
      "source", "identity", "scale", "add", "cast", "checksum", "head"};
  if (std::find(kByteBound.begin(), kByteBound.end(), op_type) ==
      kByteBound.end()) {
    return std::nullopt;
  }
  return kActFixedNs +
         static_cast<int64_t>(kActNsPerByte * static_cast<double>(bytes));
}

int64_t PieceCost::total_ns() const {
  return std::accumulate(stream_ns.begin(), stream_ns.end(), int64_t{0});
}

bool CheaperOnOneThread(const PieceCost& cost, int threads) {
  if (threads < 2 || cost.stream_ns.empty()) return false;
  const int64_t total = cost.total_ns();
  const int64_t longest =
      *std::max_element(cost.stream_ns.begin(), cost.stream_ns.end());
  const int64_t spread = std::max(longest, total / threads);
  return total - spread <= cost.hand_offs * kHandOffNs;
}

}  // namespace actorflow::internal
