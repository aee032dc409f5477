#ifndef ACTORFLOW_PLAN_REGISTER_LIFETIMES_H_
#define ACTORFLOW_PLAN_REGISTER_LIFETIMES_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "proto/plan.pb.h"

namespace actorflow::internal {

// When a plan's registers can hold data, as far as the plan's shape proves
// it: which registers need one buffer and which may share memory
// (RegisterDescProto.mem_block_id). The compiler assigns shared blocks with
// it and the validator checks hand-written ones with it.
//
// Lifetimes are known inside a training window only. The window of an
// initial register's producer V (a variable) holds the tasks that V
// reaches and that reach V again through registers that are not initial.
// Every task in it acts on piece p only after V made piece p, and V makes
// piece p only from what the window made of piece p - 1: the window runs
// one piece at a time. So a register made in the window and read there (or
// by V) never has a second buffer in use, and two such registers never
// hold data at once when every task that touches one last (its readers,
// or its producer when nobody reads it) is ordered before the other's
// producer by a path of registers.
//
// Only plain host memory on synchronous CPU streams is considered, away
// from copies, network and the caller's ports: there an act's reads and
// writes are over before its outputs are published.
class RegisterLifetimes {
 public:
  // `plan` must have passed structural validation (ids consistent, cycles
  // only through initial registers). Windows over kMaxWindowTasks tasks
  // are not analysed (their registers are never in a window).
  explicit RegisterLifetimes(const Plan& plan);
  static constexpr int kMaxWindowTasks = 4096;

  // Empty when regst_desc `id` is made and read inside a window; else why
  // not, for messages.
  std::string WhyNotInWindow(int64_t id) const;
  bool InWindow(int64_t id) const { return WhyNotInWindow(id).empty(); }
  // True when registers `a` and `b` (both in a window, one buffer each) can
  // never hold data at once.
  bool Disjoint(int64_t a, int64_t b) const;
  // Empty when Disjoint(a, b); else why they may hold data at once.
  std::string WhyOverlap(int64_t a, int64_t b) const;

 private:
  struct Register {
    int producer = -1;  // task index
    std::vector<int> consumers;
    const RegisterDescProto* proto = nullptr;
    std::vector<int> windows;  // the windows it lies in
    std::string not_in_window;
  };
  struct Window {
    int variable = -1;         // task index of V
    std::vector<int> tasks;    // V's window, V excluded
    std::map<int, int> index;  // task index -> position in `tasks`
    // reach[i] bit j: a path of registers leads from tasks[i] to tasks[j].
    std::vector<std::vector<uint64_t>> reach;
  };
  // Every task that touches `r` last in a piece: its readers, or its
  // producer when it has none.
  std::vector<int> LastTouchers(const Register& r) const;
  // True when, in window w, every last toucher of `a` is ordered before the
  // producer of `b`.
  bool Before(const Window& w, const Register& a, const Register& b) const;
  std::string Label(int task) const;

  const Plan& plan_;
  std::map<int64_t, Register> registers_;
  std::vector<Window> windows_;
};

}  // namespace actorflow::internal

#endif  // ACTORFLOW_PLAN_REGISTER_LIFETIMES_H_
