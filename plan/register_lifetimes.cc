#include "plan/register_lifetimes.h"

#include <algorithm>
#include <deque>

#include "absl/strings/str_cat.h"
#include "plan/plan_util.h"

namespace actorflow::internal {
namespace {

// Why a task's acts may still touch a register after its outputs are
// published, or "" when they never do.
std::string WhyNotPlain(const TaskProto& task) {
  if (task.stream().device_type() != DeviceKinds::CPU)
    return "runs on a GPU stream";
  if (task.stream().host_async()) return "runs on an asynchronous stream";
  const std::string& op = task.kernel().op_type();
  if (IsHostToDevice(task) || IsDeviceToHost(task)) return "is a device copy";
  if (op == "net_send" || op == "net_recv") return "moves it over the network";
  if (IsFeed(task) || IsFetch(task)) return "hands it to the caller";
  return "";
}

}  // namespace

RegisterLifetimes::RegisterLifetimes(const Plan& plan) : plan_(plan) {
  const int n = plan.task_size();
  std::map<int64_t, int> index;
  for (int t = 0; t < n; ++t) index[plan.task(t).task_id()] = t;
  std::vector<bool> initial_producer(n, false);
  // Edges through registers that are not initial.
  std::vector<std::vector<int>> succ(n), pred(n);
  for (int t = 0; t < n; ++t) {
    for (const auto& [key, desc] : plan.task(t).produced_regst_desc()) {
      Register& r = registers_[desc.regst_desc_id()];
      r.producer = t;
      r.proto = &desc;
      for (int64_t id : desc.consumer_task_id()) {
        auto it = index.find(id);
        if (it != index.end()) r.consumers.push_back(it->second);
      }
      if (desc.initial_register()) {
        initial_producer[t] = true;
        continue;
      }
      for (int c : r.consumers) {
        succ[t].push_back(c);
        pred[c].push_back(t);
      }
    }
  }

  for (int v = 0; v < n; ++v) {
    if (!initial_producer[v]) continue;
    // Forward from V's (initial) registers' readers; backward from V.
    std::vector<bool> ahead(n, false), behind(n, false);
    std::deque<int> queue;
    for (const auto& [key, desc] : plan.task(v).produced_regst_desc()) {
      for (int c : registers_[desc.regst_desc_id()].consumers) {
        if (!ahead[c]) queue.push_back(c);
        ahead[c] = true;
      }
    }
    while (!queue.empty()) {
      const int t = queue.front();
      queue.pop_front();
      for (int c : succ[t]) {
        if (!ahead[c]) queue.push_back(c);
        ahead[c] = true;
      }
    }
    queue.push_back(v);
    while (!queue.empty()) {
      const int t = queue.front();
      queue.pop_front();
      for (int p : pred[t]) {
        if (!behind[p]) queue.push_back(p);
        behind[p] = true;
      }
    }
    Window w;
    w.variable = v;
    for (int t = 0; t < n; ++t) {
      if (t != v && ahead[t] && behind[t]) {
        w.index[t] = static_cast<int>(w.tasks.size());
        w.tasks.push_back(t);
      }
    }
    const int size = static_cast<int>(w.tasks.size());
    if (size == 0 || size > kMaxWindowTasks) continue;
    // Reachability inside the window (a path between two of its tasks
    // stays inside it), in reverse topological order.
    std::vector<int> indegree(size, 0), order;
    for (int i = 0; i < size; ++i) {
      for (int c : succ[w.tasks[i]]) {
        auto it = w.index.find(c);
        if (it != w.index.end()) ++indegree[it->second];
      }
    }
    for (int i = 0; i < size; ++i) {
      if (indegree[i] == 0) order.push_back(i);
    }
    for (size_t k = 0; k < order.size(); ++k) {
      for (int c : succ[w.tasks[order[k]]]) {
        auto it = w.index.find(c);
        if (it != w.index.end() && --indegree[it->second] == 0) {
          order.push_back(it->second);
        }
      }
    }
    if (static_cast<int>(order.size()) != size) continue;  // not validated
    const size_t words = (static_cast<size_t>(size) + 63) / 64;
    w.reach.assign(size, std::vector<uint64_t>(words, 0));
    for (auto k = order.rbegin(); k != order.rend(); ++k) {
      std::vector<uint64_t>& mine = w.reach[*k];
      for (int c : succ[w.tasks[*k]]) {
        auto it = w.index.find(c);
        if (it == w.index.end()) continue;
        const int j = it->second;
        mine[j / 64] |= uint64_t{1} << (j % 64);
        for (size_t x = 0; x < words; ++x) mine[x] |= w.reach[j][x];
      }
    }
    windows_.push_back(std::move(w));
  }

  for (auto& [id, r] : registers_) {
    const RegisterDescProto& desc = *r.proto;
    if (desc.initial_register()) {
      r.not_in_window = "it is an initial register";
      continue;
    }
    if (desc.mem_case().device_type() != DeviceKinds::CPU ||
        desc.mem_case().pinned()) {
      r.not_in_window = "it lives in device or pinned memory";
      continue;
    }
    std::vector<int> touchers = r.consumers;
    touchers.push_back(r.producer);
    for (int t : touchers) {
      const std::string why = WhyNotPlain(plan.task(t));
      if (!why.empty()) {
        r.not_in_window = absl::StrCat(Label(t), ", which touches it, ", why);
        break;
      }
    }
    if (!r.not_in_window.empty()) continue;
    for (size_t w = 0; w < windows_.size(); ++w) {
      const Window& window = windows_[w];
      bool inside = window.index.count(r.producer) > 0;
      for (int c : r.consumers) {
        inside = inside && (c == window.variable || window.index.count(c) > 0);
      }
      if (inside) r.windows.push_back(static_cast<int>(w));
    }
    if (r.windows.empty()) {
      r.not_in_window =
          "its producer and readers are not all inside one training window "
          "(the tasks that a variable's initial register reaches and that "
          "reach the variable again)";
    }
  }
}

std::string RegisterLifetimes::Label(int task) const {
  return TaskLabel(plan_.task(task));
}

std::string RegisterLifetimes::WhyNotInWindow(int64_t id) const {
  auto it = registers_.find(id);
  if (it == registers_.end()) return "no such regst_desc";
  return it->second.not_in_window;
}

std::vector<int> RegisterLifetimes::LastTouchers(const Register& r) const {
  if (r.consumers.empty()) return {r.producer};
  return r.consumers;
}

bool RegisterLifetimes::Before(const Window& w, const Register& a,
                               const Register& b) const {
  const int to = w.index.at(b.producer);
  for (int t : LastTouchers(a)) {
    // V reads a in the next piece, after the window's every act of this one.
    if (t == w.variable || t == b.producer) return false;
    const int from = w.index.at(t);
    if ((w.reach[from][to / 64] >> (to % 64) & 1) == 0) return false;
  }
  return true;
}

bool RegisterLifetimes::Disjoint(int64_t a, int64_t b) const {
  auto ia = registers_.find(a);
  auto ib = registers_.find(b);
  if (a == b || ia == registers_.end() || ib == registers_.end()) return false;
  const Register& ra = ia->second;
  const Register& rb = ib->second;
  if (!ra.not_in_window.empty() || !rb.not_in_window.empty()) return false;
  for (int w : ra.windows) {
    if (std::find(rb.windows.begin(), rb.windows.end(), w) == rb.windows.end())
      continue;
    if (Before(windows_[w], ra, rb) || Before(windows_[w], rb, ra)) return true;
  }
  return false;
}

std::string RegisterLifetimes::WhyOverlap(int64_t a, int64_t b) const {
  if (Disjoint(a, b)) return "";
  for (int64_t id : {a, b}) {
    const std::string why = WhyNotInWindow(id);
    if (!why.empty()) return absl::StrCat("regst_desc ", id, ": ", why);
  }
  if (a == b) return "a register cannot share memory with itself";
  const Register& ra = registers_.at(a);
  const Register& rb = registers_.at(b);
  for (int w : ra.windows) {
    if (std::find(rb.windows.begin(), rb.windows.end(), w) !=
        rb.windows.end()) {
      return absl::StrCat(
          "regst_desc ", a, " and regst_desc ", b,
          " may hold data at once: no path of registers orders every reader "
          "of one before the other's producer (",
          Label(ra.producer), ", ", Label(rb.producer), ")");
    }
  }
  return absl::StrCat("regst_desc ", a, " and regst_desc ", b,
                      " lie in different training windows, which run "
                      "pieces independently");
}

}  // namespace actorflow::internal
