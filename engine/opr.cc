#include "engine/opr.h"

#include <algorithm>

namespace actorflow::engine {

namespace {

// An operation lists a handful of variables: insertion sort, in place and
// without std::sort's set-up, is the fast way to order so few.
template <typename Vec>
void SortUnique(Vec* vars) {
  auto begin = vars->begin();
  if (vars->size() > 16) {
    std::sort(begin, vars->end());
  } else {
    for (auto it = begin; it != vars->end(); ++it) {
      auto var = *it;
      auto hole = it;
      for (; hole != begin && var < *(hole - 1); --hole) *hole = *(hole - 1);
      *hole = var;
    }
  }
  vars->erase(std::unique(begin, vars->end()), vars->end());
}

}  // namespace

Opr::Opr(AsyncFn fn_in, const std::vector<VarHandle>& const_in,
         const std::vector<VarHandle>& mutable_in, FnProperty prop_in,
         std::string name_in)
    : fn(std::move(fn_in)), prop(prop_in), name(std::move(name_in)) {
  mutable_vars.assign(mutable_in.begin(), mutable_in.end());
  SortUnique(&mutable_vars);
  for (VarHandle var : const_in) {
    if (!std::binary_search(mutable_vars.begin(), mutable_vars.end(), var)) {
      const_vars.push_back(var);
    }
  }
  SortUnique(&const_vars);
}

void BlockWaiter::Notify() {
  MutexLock lock(&mu);
  done = true;
  cv.SignalAll();
}

void BlockWaiter::Wait() {
  MutexLock lock(&mu);
  while (!done) cv.Wait(&mu);
}

OprBlock::OprBlock(Engine* engine_in, Opr* opr_in, Context ctx_in,
                   int priority_in, uint64_t seq_in)
    : engine(engine_in),
      opr(opr_in),
      ctx(ctx_in),
      priority(priority_in),
      seq(seq_in),
      wait(static_cast<int>(opr_in->const_vars.size() +
                            opr_in->mutable_vars.size()) +
           1),
      waits(opr_in->const_vars.size() + opr_in->mutable_vars.size()) {
  for (VarWait& w : waits) w.block = this;
}

}  // namespace actorflow::engine
