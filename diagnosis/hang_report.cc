#include "diagnosis/hang_report.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "plan/plan_util.h"

namespace actorflow::internal {
namespace {

std::string Seconds(int64_t ns) {
  return absl::StrFormat("%.2f s", static_cast<double>(ns) / 1e9);
}

// The plan's registers: who makes each and who reads it.
struct Edges {
  std::map<int64_t, int> producer;                // regst_desc_id -> task
  std::map<int64_t, std::vector<int>> consumers;  // regst_desc_id -> tasks
};

Edges EdgesOf(const Plan& plan) {
  Edges edges;
  for (int t = 0; t < plan.task_size(); ++t) {
    for (const auto& [name, desc] : SortedOutputs(plan.task(t))) {
      edges.producer[desc->regst_desc_id()] = t;
    }
    for (const auto& [name, ids] : SortedInputs(plan.task(t))) {
      for (int64_t id : ids) edges.consumers[id].push_back(t);
    }
  }
  return edges;
}

class Reporter {
 public:
  Reporter(const Plan& plan, const HangFacts& facts)
      : plan_(plan),
        facts_(facts),
        edges_(EdgesOf(plan)),
        waits_on_(plan.task_size()) {}

  std::string Report() {
    std::vector<std::string> lines;
    if (!facts_.reason.empty()) {
      lines.push_back(absl::StrCat("hang report: ", facts_.reason));
    }
    std::vector<std::string> finished;
    for (int t = 0; t < plan_.task_size(); ++t) {
      const std::optional<ActorSnapshot>& snapshot = facts_.snapshots[t];
      if (snapshot && snapshot->state == ActorSnapshot::State::kFinished) {
        finished.push_back(Name(t));
        continue;
      }
      lines.push_back(absl::StrCat("  ", Header(t), ": ", Describe(t)));
    }
    if (!finished.empty()) {
      lines.push_back(
          absl::StrCat("  finished: ", absl::StrJoin(finished, ", ")));
    }
    std::vector<int> cycle = FindWaitCycle();
    if (!cycle.empty()) {
      std::vector<std::string> names;
      for (int t : cycle) names.push_back(Name(t));
      names.push_back(names.front());
      lines.push_back(absl::StrCat(
          "  cycle of waits: ", absl::StrJoin(names, " -> "),
          " (each waits on the next; no initial register breaks this "
          "cycle, so none of them can act again)"));
    } else {
      lines.push_back("  cycle of waits: none");
    }
    return absl::StrJoin(lines, "\n");
  }

 private:
  std::string Name(int t) const {
    return absl::StrCat("'", plan_.task(t).name(), "'");
  }
  std::string Header(int t) const {
    const TaskProto& task = plan_.task(t);
    std::string acts;
    if (facts_.snapshots[t]) {
      acts = absl::StrCat(", ", facts_.snapshots[t]->acts, " acts");
    }
    return absl::StrCat(TaskLabel(task), " [", task.kernel().op_type(), " on ",
                        facts_.streams[t], acts, "]");
  }
  std::string Kernel(int t) const {
    int64_t ns = facts_.kernel_running_ns[t];
    return ns > 0
               ? absl::StrCat("its kernel has been running for ", Seconds(ns))
               : std::string("its kernel is running");
  }

  bool IsBoundary(int t) const {
    const std::string& op = plan_.task(t).kernel().op_type();
    return op == "feed" || op == "fetch";
  }

  std::string Describe(int t) {
    const std::optional<ActorSnapshot>& snapshot = facts_.snapshots[t];
    if (facts_.kernel_running_ns[t] >= 0) return Kernel(t);
    if (!snapshot) return NoAnswer(t);
    if (IsBoundary(t)) {
      return plan_.task(t).kernel().op_type() == "feed"
                 ? "a feed: waits for its caller to feed or close it"
                 : "a fetch: hands what arrives to its caller";
    }
    std::vector<std::string> waits;
    if (snapshot->state == ActorSnapshot::State::kActing) {
      if (snapshot->is_source && !snapshot->started) {
        return "has not been started";
      }
      for (const ActorSnapshot::Input& in : snapshot->inputs) {
        if (in.ready > 0 || in.ended) continue;
        int producer = edges_.producer.at(in.regst_desc_id);
        waits_on_[t].insert(producer);
        waits.push_back(absl::StrCat("input '", in.name, "' (regst_desc ",
                                     in.regst_desc_id, "): nothing ready from ",
                                     Name(producer), Doing(producer)));
      }
      if (waits.empty()) {
        for (const ActorSnapshot::Output& out : snapshot->outputs) {
          if (out.free > 0) continue;
          waits.push_back(absl::StrCat(
              "a free register of '", out.name, "' (regst_desc ",
              out.regst_desc_id, ", register_num ", out.register_num,
              "): ", Holders(t, out.regst_desc_id, out.register_num)));
        }
      }
      if (waits.empty()) {
        return "can act (it waits for its thread, busy with other tasks)";
      }
      return absl::StrCat("waits for ", absl::StrJoin(waits, "; and for "));
    }
    // Ended: it makes no more acts, and finishes once every input has ended
    // and every register it made has come back.
    for (const ActorSnapshot::Input& in : snapshot->inputs) {
      if (in.ended) continue;
      int producer = edges_.producer.at(in.regst_desc_id);
      waits.push_back(absl::StrCat("the end of input '", in.name,
                                   "' (regst_desc ", in.regst_desc_id,
                                   ") from ", Name(producer), Doing(producer)));
    }
    for (const ActorSnapshot::Output& out : snapshot->outputs) {
      if (out.free == out.register_num) continue;
      waits.push_back(absl::StrCat(
          out.register_num - out.free, " of its registers of '", out.name,
          "' (regst_desc ", out.regst_desc_id, ") to come back: ",
          Holders(t, out.regst_desc_id, out.register_num - out.free)));
    }
    return absl::StrCat("has ended and waits for ",
                        absl::StrJoin(waits, "; and for "));
  }

  // A short clause on what task `t` is doing, for the task that waits on it.
  std::string Doing(int t) const {
    if (facts_.kernel_running_ns[t] >= 0)
      return absl::StrCat(" (", Kernel(t), ")");
    if (!facts_.snapshots[t]) return " (which does not answer)";
    switch (facts_.snapshots[t]->state) {
      case ActorSnapshot::State::kActing:
        return " (which waits too)";
      case ActorSnapshot::State::kEnded:
        return " (which has ended)";
      case ActorSnapshot::State::kFinished:
        return " (which has finished)";
    }
    return "";
  }

  // Who has the `missing` registers of regst_desc `id` (made by `t`): the
  // consumers holding unread ones, and those that have them in hand.
  std::string Holders(int t, int64_t id, int64_t missing) {
    std::vector<std::string> holders;
    int64_t unread = 0;
    // A holder whose count is unknown (a running kernel, a silent thread,
    // a fetch's caller) may hold the rest.
    bool opaque = false;
    auto found = edges_.consumers.find(id);
    if (found == edges_.consumers.end()) return "no task reads them";
    for (int c : found->second) {
      const std::optional<ActorSnapshot>& snapshot = facts_.snapshots[c];
      if (facts_.kernel_running_ns[c] >= 0) {
        waits_on_[t].insert(c);
        holders.push_back(absl::StrCat(Name(c), " (", Kernel(c), ")"));
        opaque = true;
        continue;
      }
      if (!snapshot) {
        waits_on_[t].insert(c);
        holders.push_back(absl::StrCat(Name(c), " (which does not answer)"));
        opaque = true;
        continue;
      }
      if (IsBoundary(c)) {
        holders.push_back(
            absl::StrCat(Name(c),
                         " (a fetch: its caller holds what it has not fetched "
                         "and released)"));
        opaque = true;
        continue;
      }
      for (const ActorSnapshot::Input& in : snapshot->inputs) {
        if (in.regst_desc_id != id || in.ready == 0) continue;
        waits_on_[t].insert(c);
        unread = std::max(unread, in.ready);
        holders.push_back(
            absl::StrCat(in.ready, " unread at ", Name(c), Doing(c)));
      }
    }
    if (unread < missing && !opaque) {
      holders.push_back(absl::StrCat(
          missing - unread,
          " in use or on the way (read by a kernel, held by a caller, or "
          "in a message)"));
    }
    return absl::StrJoin(holders, ", ");
  }

  std::string NoAnswer(int t) const {
    for (int other = 0; other < plan_.task_size(); ++other) {
      if (facts_.streams[other] == facts_.streams[t] &&
          facts_.kernel_running_ns[other] >= 0) {
        return absl::StrCat("did not answer: its thread is busy: ", Name(other),
                            "'s kernel is running");
      }
    }
    return "did not answer: its thread is busy";
  }

  // A cycle in "waits on" (inputs: the producer; outputs: the consumers),
  // among tasks that answered and are stuck; empty when there is none.
  std::vector<int> FindWaitCycle() const {
    const int n = plan_.task_size();
    std::vector<int> color(n, 0);  // 0 new, 1 on the path, 2 done
    std::vector<int> path;
    std::vector<int> cycle;
    std::function<bool(int)> visit = [&](int t) {
      color[t] = 1;
      path.push_back(t);
      for (int next : waits_on_[t]) {
        if (color[next] == 1) {
          auto at = std::find(path.begin(), path.end(), next);
          cycle.assign(at, path.end());
          return true;
        }
        if (color[next] == 0 && visit(next)) return true;
      }
      path.pop_back();
      color[t] = 2;
      return false;
    };
    for (int t = 0; t < n; ++t) {
      if (color[t] == 0 && visit(t)) break;
    }
    return cycle;
  }

  const Plan& plan_;
  const HangFacts& facts_;
  const Edges edges_;
  std::vector<std::set<int>> waits_on_;  // per task, filled by Describe
};

}  // namespace

std::string HangReport(const Plan& plan, const HangFacts& facts) {
  return Reporter(plan, facts).Report();
}

}  // namespace actorflow::internal
