#ifndef ACTORFLOW_ACTOR_STATS_H_
#define ACTORFLOW_ACTOR_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "actorflow/version.h"

namespace actorflow {
ACTORFLOW_NAMESPACE_BEGIN

// Where one task's time went in one run (ActorEnv::timed). The time an
// actor could not act is charged to what it lacked when it last stopped:
// an input slot with nothing ready ("blocked on inputs": its producer is
// slow, or the producer's register_num too small) before an output slot
// with no free register ("blocked on free outputs": a consumer is slow, or
// this register_num is too small). A source never waits on inputs and a
// task with no outputs never on outputs. Time the actor's thread spent on
// other actors while this one could act is in no column.
struct TaskStats {
  int64_t acts = 0;
  // In the kernel: on a CPU stream its calls; on an asynchronous stream
  // from the later of queueing and the previous act's end to the act's end.
  int64_t busy_ns = 0;
  int64_t input_wait_ns = 0;
  int64_t output_wait_ns = 0;
  // Not a sum over the run but the memory the task's outputs hold now:
  // every output's register_num registers, plus what its kernel keeps
  // for them beside (KernelContext::ReportHeldBytes: a pipeline stage's
  // samples, which its registers' headers point into).
  int64_t register_bytes = 0;
};

// What one actor was doing when asked (for the hang report). Taken on the
// actor's own thread.
struct ActorSnapshot {
  enum class State { kActing, kEnded, kFinished };
  struct Input {
    int64_t regst_desc_id = 0;
    std::string name;    // the consumed group's name
    int64_t ready = 0;   // registers delivered and not yet read
    bool ended = false;  // its producer sent end-of-data
  };
  struct Output {
    int64_t regst_desc_id = 0;
    std::string name;
    int64_t free = 0;
    int64_t register_num = 0;
  };
  State state = State::kFinished;
  bool is_source = false;
  bool started = false;    // a source: the run told it to begin
  int64_t acts = 0;        // since the session was built
  int64_t next_piece = 0;  // a plain source: the next piece it would make
  int64_t piece_end = 0;   // a plain source: the run ends before this piece
  std::vector<Input> inputs;
  std::vector<Output> outputs;
};

ACTORFLOW_NAMESPACE_END
}  // namespace actorflow

#endif  // ACTORFLOW_ACTOR_STATS_H_
