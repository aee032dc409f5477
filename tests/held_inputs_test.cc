// A kernel that holds its inputs past its act (actor/held_inputs.h): the
// producer gets each register back only when the hold is released, from
// another thread, and never writes it meanwhile.
#include "actor/held_inputs.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "actorflow/session.h"
#include "kernels/builtin_kernels.h"
#include "plan/plan_builder.h"

namespace actorflow::internal {
namespace {

struct Hold {
  std::unique_ptr<HeldInputs> inputs;
  const float* value = nullptr;  // the held register's one float
  int64_t piece = 0;
};

// What the holding kernel hands to the releasing thread.
struct Holds {
  std::mutex mu;
  std::condition_variable changed;
  std::deque<Hold> held;  // oldest first
  int64_t taken = 0;      // acts so far
  bool no_hold = false;   // HoldInputs gave null
};

// source (2 registers, piece p holds p) -> keep, which holds its input and
// fails at piece `fail_at` (-1: never), after holding it.
std::unique_ptr<Session> MakeSession(Holds* holds, int32_t keep_stream,
                                     int64_t fail_at) {
  TaskDef src{.name = "src", .op_type = "source"};
  src.register_num = 2;
  src.elem_cnt = 1;
  src.attrs["value"] = FloatAttr(0);
  src.attrs["step"] = FloatAttr(1);
  TaskDef keep{.name = "keep", .op_type = "held_keep", .inputs = {"src"}};
  keep.stream_index = keep_stream;
  keep.has_output = false;
  absl::StatusOr<Plan> plan = BuildPlan({src, keep}, 0);
  REQUIRE(plan.ok());
  SessionOptions options;
  options.kernels.BindFunction(
      "held_keep",
      [holds, fail_at](KernelContext* ctx) {
        std::unique_ptr<HeldInputs> inputs = HoldInputs(*ctx);
        std::lock_guard<std::mutex> lock(holds->mu);
        if (inputs == nullptr) holds->no_hold = true;
        holds->held.push_back({std::move(inputs),
                               ctx->input(0).blob(0).data<float>()->data(),
                               ctx->piece_id()});
        ++holds->taken;
        holds->changed.notify_all();
        if (ctx->piece_id() == fail_at) {
          return absl::InternalError("keep refuses this piece");
        }
        return absl::OkStatus();
      },
      [](const KernelInitContext&) { return absl::OkStatus(); });
  absl::StatusOr<std::unique_ptr<Session>> session =
      Session::Create(*std::move(plan), std::move(options));
  REQUIRE(session.ok());
  return *std::move(session);
}

// Releases the oldest hold whenever both registers are held, or once
// `pieces` acts came (then all): what it saw, checked by the caller.
struct Releaser {
  int64_t most_held = 0;
  int64_t rewritten = 0;  // holds whose register changed while held
  int64_t released = 0;
};
void ReleaseAll(Holds* holds, int64_t pieces, Releaser* seen) {
  while (seen->released < pieces) {
    Hold oldest;
    {
      std::unique_lock<std::mutex> lock(holds->mu);
      // Bounded, so that a broken runtime fails the test rather than
      // hanging it.
      if (!holds->changed.wait_for(lock, std::chrono::seconds(60), [&] {
            return holds->held.size() >= 2 ||
                   (holds->taken == pieces && !holds->held.empty());
          })) {
        return;
      }
      seen->most_held = std::max<int64_t>(seen->most_held, holds->held.size());
      oldest = std::move(holds->held.front());
      holds->held.pop_front();
    }
    if (*oldest.value != static_cast<float>(oldest.piece)) ++seen->rewritten;
    if (oldest.inputs != nullptr) oldest.inputs->Release();
    ++seen->released;
  }
}

TEST_CASE("a held input goes back to its producer only when released",
          "[held]") {
  constexpr int64_t kPieces = 200;
  // The same thread as the producer, and another one.
  const int32_t keep_stream = GENERATE(0, 1);
  INFO("keep on stream " << keep_stream);
  Holds holds;
  std::unique_ptr<Session> session = MakeSession(&holds, keep_stream, -1);
  Releaser seen;
  std::thread releaser([&] { ReleaseAll(&holds, kPieces, &seen); });
  absl::StatusOr<RunStats> stats = session->Run(kPieces);
  releaser.join();
  REQUIRE(stats.ok());
  CHECK_FALSE(holds.no_hold);
  CHECK(seen.released == kPieces);
  CHECK(seen.rewritten == 0);
  // Two registers: with both held, the source could not make a third.
  CHECK(seen.most_held == 2);
  // Every register came back: the session runs again.
  holds.taken = 0;
  Releaser again;
  std::thread releaser2([&] { ReleaseAll(&holds, kPieces, &again); });
  stats = session->Run(kPieces);
  releaser2.join();
  REQUIRE(stats.ok());
  CHECK(again.released == kPieces);
}

TEST_CASE("a kernel that fails after holding its input ends the run",
          "[held]") {
  constexpr int64_t kPieces = 50;
  constexpr int64_t kFailAt = 7;
  Holds holds;
  std::unique_ptr<Session> session = MakeSession(&holds, 1, kFailAt);
  Releaser seen;
  // The failed act's input comes back through its hold alone: returned
  // twice, the producer would count one register too many and never end.
  std::thread releaser([&] { ReleaseAll(&holds, kFailAt + 1, &seen); });
  absl::StatusOr<RunStats> stats = session->Run(kPieces);
  releaser.join();
  REQUIRE_FALSE(stats.ok());
  CHECK(stats.status().message().find("keep refuses this piece") !=
        std::string::npos);
  CHECK(seen.released == kFailAt + 1);
  CHECK(seen.rewritten == 0);
}

}  // namespace
}  // namespace actorflow::internal
