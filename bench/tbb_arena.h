#ifndef ACTORFLOW_BENCH_TBB_ARENA_H_
#define ACTORFLOW_BENCH_TBB_ARENA_H_

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/task_arena.h>

#include <memory>
#include <utility>

namespace actorflow::internal::bench {

// An initialized oneTBB arena of `threads` slots, or (0) as many as oneTBB
// finds the machine has, as it is shipped. oneTBB caps its workers at the
// machine's CPUs less one whatever an arena asks for ("the number of
// workers is currently limited"): a forced arena larger than the machine
// raises that cap while it lives, or 3 slots on 2 CPUs would run 2 threads.
class TbbArena {
 public:
  explicit TbbArena(int threads)
      : limit_(threads > 0
                   ? std::make_unique<tbb::global_control>(
                         tbb::global_control::max_allowed_parallelism, threads)
                   : nullptr),
        arena_(threads > 0 ? threads : tbb::task_arena::automatic) {
    arena_.initialize();
  }
  TbbArena(const TbbArena&) = delete;
  TbbArena& operator=(const TbbArena&) = delete;

  template <typename F>
  void Execute(F&& f) {
    arena_.execute(std::forward<F>(f));
  }
  tbb::task_arena* arena() { return &arena_; }

 private:
  // Declared first: the cap outlives the arena's threads.
  std::unique_ptr<tbb::global_control> limit_;
  tbb::task_arena arena_;
};

}  // namespace actorflow::internal::bench

#endif  // ACTORFLOW_BENCH_TBB_ARENA_H_
