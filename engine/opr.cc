#include "engine/opr.h"

#include <algorithm>
#include <cstddef>

namespace actorflow::engine {

namespace {

// Sorts vars[0, n) and drops repeats; returns how many are left.
size_t SortUnique(VarHandle* vars, size_t n) {
  std::sort(vars, vars + n);
  return static_cast<size_t>(std::unique(vars, vars + n) - vars);
}

// Whether vars[0, n) holds `var`.
inline bool Holds(const VarHandle* vars, size_t n, VarHandle var) {
  for (size_t i = 0; i < n; ++i) {
    if (vars[i] == var) return true;
  }
  return false;
}

// Adds `var` to the sorted, repeat-free vars[0, n) unless it is there
// already; returns the new count. Inline and one shifting loop: a call, or
// the memmove a separate shift becomes, costs more than the few entries.
__attribute__((always_inline)) inline size_t InsertUnique(VarHandle* vars,
                                                          size_t n,
                                                          VarHandle var) {
  if (Holds(vars, n, var)) return n;
  size_t hole = n;
  for (; hole > 0 && var < vars[hole - 1]; --hole) vars[hole] = vars[hole - 1];
  vars[hole] = var;
  return n + 1;
}

}  // namespace

Opr::Opr(AsyncFn&& fn_in, const std::vector<VarHandle>& const_in,
         const std::vector<VarHandle>& mutable_in, FnProperty prop_in,
         std::string&& name_in)
    : fn(std::move(fn_in)), prop(prop_in) {
  if (!name_in.empty()) name_ = new Name{std::move(name_in)};
  // Built in place: the written ones at the back, sorted, then the read
  // ones that are not also written in front of them.
  const size_t num_in = const_in.size() + mutable_in.size();
  VarHandle* all = inline_vars_;
  if (num_in > kInlineVars) all = heap_vars_ = new VarHandle[num_in];
  VarHandle* written = all + const_in.size();
  size_t num_written = 0;
  size_t num_read = 0;
  if (num_in <= kInlineVars) {
    // A handful (every push but rare wide ones): kept in order while
    // copied, which costs less than sorting and deduplicating afterwards.
    for (VarHandle var : mutable_in) {
      num_written = InsertUnique(written, num_written, var);
    }
    for (VarHandle var : const_in) {
      if (!Holds(written, num_written, var)) {
        num_read = InsertUnique(all, num_read, var);
      }
    }
  } else {
    for (size_t i = 0; i < mutable_in.size(); ++i) written[i] = mutable_in[i];
    num_written = SortUnique(written, mutable_in.size());
    for (VarHandle var : const_in) {
      if (!std::binary_search(written, written + num_written, var)) {
        all[num_read++] = var;
      }
    }
    num_read = SortUnique(all, num_read);
  }
  // Close the gap between the two parts (moving down: no overlap issue).
  for (size_t i = 0; i < num_written; ++i) all[num_read + i] = written[i];
  num_const_ = static_cast<uint32_t>(num_read);
  num_vars_ = static_cast<uint32_t>(num_read + num_written);
}

Opr::~Opr() {
  delete[] heap_vars_;
  delete name_;
}

const std::string& Opr::name() const {
  static const std::string* const kUnnamed = new std::string();
  return name_ != nullptr ? name_->text : *kUnnamed;
}

static_assert(sizeof(Opr) == 128, "Opr is meant to fill two cache lines");

void BlockWaiter::Notify() {
  internal::MutexLock lock(&mu);
  done = true;
  cv.SignalAll();
}

void BlockWaiter::Wait() {
  internal::MutexLock lock(&mu);
  while (!done) cv.Wait(&mu);
}

OprBlock::OprBlock(Opr* opr_in, Context ctx_in, int priority_in)
    : wait(static_cast<int>(opr_in->vars().size()) + 1),
      opr(opr_in),
      ctx(ctx_in),
      prop(opr_in->prop),
      internal(opr_in->internal),
      priority(priority_in) {}

static_assert(sizeof(OprBlock) == 64, "OprBlock is meant to fill one line");

}  // namespace actorflow::engine
