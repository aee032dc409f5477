#include "thread/multi_thread_loop.h"

#include <algorithm>
#include <atomic>
#include <memory>

#include "thread/balanced_splitter.h"
#include "thread/blocking_counter.h"

namespace actorflow::internal {
namespace {

// Shared with the pool tasks, which may start after the loop has returned
// (finding no range left); hence shared ownership.
struct LoopState {
  LoopState(int64_t n, int64_t parts, const std::function<void(int64_t)>* fn)
      : splitter(n, parts), fn(fn), done(parts) {}

  // Runs ranges until none is left unclaimed. `fn` is only touched while a
  // range is claimed, and the caller waits for every claimed range, so it is
  // still alive then.
  void RunRanges() {
    while (true) {
      int64_t part = next.fetch_add(1, std::memory_order_relaxed);
      if (part >= splitter.parts()) return;
      Range range = splitter.At(part);
      for (int64_t i = range.begin; i < range.end; ++i) (*fn)(i);
      done.Decrement();
    }
  }

  BalancedSplitter splitter;
  const std::function<void(int64_t)>* fn;
  std::atomic<int64_t> next{0};
  BlockingCounter done;
};

}  // namespace

void MultiThreadLoop(int64_t n, const std::function<void(int64_t)>& fn,
                     ThreadPool* pool) {
  if (n <= 0) return;
  int64_t parts = std::min<int64_t>(n, pool->size() + 1);
  auto state = std::make_shared<LoopState>(n, parts, &fn);
  for (int64_t p = 1; p < parts; ++p) {
    pool->Schedule([state] { state->RunRanges(); });
  }
  state->RunRanges();
  state->done.Wait();
}

void MultiThreadLoop(int64_t n, const std::function<void(int64_t)>& fn) {
  MultiThreadLoop(n, fn, DefaultThreadPool());
}

}  // namespace actorflow::internal
