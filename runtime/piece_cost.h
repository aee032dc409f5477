#ifndef ACTORFLOW_RUNTIME_PIECE_COST_H_
#define ACTORFLOW_RUNTIME_PIECE_COST_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace actorflow::internal {

// Whether a plan's CPU streams are worth spreading over threads, for acts
// whose time can be told in advance.
//
// Only the built-in kernels whose time follows the bytes they read and
// write (elementwise ops, copies, sums, the counting source) get an
// estimate: a fixed cost per act plus those bytes at the speed of a core's
// cache. Any other kernel (a user's, a reader, a matmul, a feed) has none,
// and then nothing is assumed about the plan.
//
// The figures are the quick start's (examples/plans/quickstart.pbtxt: five
// acts over 1 KiB registers, 5.6 KiB read and written a piece) on a 2-vCPU
// VM: one thread ran a piece in 0.63 us, about 30 ns an act plus 0.05 ns a
// byte; its streams on two threads took 0.75 us more a piece for the 4
// registers each piece hands between streams, about 0.2 us a hand-off (the
// message's and the register's cache lines moving to the other core, and
// back when the register is returned).
inline constexpr int64_t kActFixedNs = 30;
inline constexpr double kActNsPerByte = 0.05;
inline constexpr int64_t kHandOffNs = 200;

// One act of a task with kernel `op_type` that reads and writes `bytes`;
// nullopt when the kernel is not one of those above.
std::optional<int64_t> EstimatedActNs(std::string_view op_type, int64_t bytes);

// A plan's CPU work per piece, stream by stream (each stream's acts
// summed), and the registers each piece hands from one of those streams to
// another.
struct PieceCost {
  std::vector<int64_t> stream_ns;
  int64_t hand_offs = 0;

  // Every stream's acts together: the piece's time on one thread.
  int64_t total_ns() const;
};

// Whether `threads` threads (at least 2) would save less than the
// hand-offs they add: the most they save is the total less the larger of
// the longest stream and an even share of the total.
bool CheaperOnOneThread(const PieceCost& cost, int threads);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_RUNTIME_PIECE_COST_H_
