// The peer suite's workloads as actorflow plans: each stage a task whose
// kernel spins the calibrated work, on CPU streams split evenly over the
// threads, `register_num` = the in-flight cap.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "actorflow/kernel.h"
#include "actorflow/kernel_bindings.h"
#include "actorflow/session.h"
#include "bench/peer_workloads.h"
#include "plan/plan_builder.h"

namespace actorflow::internal::bench::actorflow_peer {
namespace {

constexpr char kWork[] = "bench_work";
constexpr char kStamp[] = "bench_stamp";

// Spins attr `iters` per act. With attr `fill`, writes the piece id over
// its output, as a producer of real data would; else leaves it as it is.
class WorkKernel : public Kernel {
 public:
  absl::Status Init(const KernelInitContext& ctx) override {
    auto iters = ctx.IntAttrOr("iters", 0);
    if (!iters.ok()) return iters.status();
    auto fill = ctx.BoolAttrOr("fill", false);
    if (!fill.ok()) return fill.status();
    iters_ = *iters;
    fill_ = *fill;
    return absl::OkStatus();
  }
  absl::Status Forward(KernelContext* ctx) override {
    BusyWork::Spin(iters_);
    if (fill_) {
      auto data = ctx->output(0).blob(0).mutable_data<float>();
      if (!data.ok()) return data.status();
      for (float& x : *data) x = static_cast<float>(ctx->piece_id());
    }
    return absl::OkStatus();
  }

 private:
  int64_t iters_ = 0;
  bool fill_ = false;
};

// Records when each act starts; owned by the caller (BindObject).
class StampKernel : public Kernel {
 public:
  explicit StampKernel(int64_t acts) { stamps_.reserve(acts); }
  absl::Status Forward(KernelContext*) override {
    stamps_.push_back(NowNs());
    return absl::OkStatus();
  }
  const std::vector<int64_t>& stamps() const { return stamps_; }

 private:
  std::vector<int64_t> stamps_;
};

SessionOptions Options() {
  SessionOptions options;
  options.kernels.Bind(kWork, [] { return std::make_unique<WorkKernel>(); });
  return options;
}

TaskDef Work(std::string name, std::vector<std::string> inputs, int stream,
             int cap, int64_t iters, int64_t elem_cnt = 1) {
  TaskDef def{
      .name = std::move(name), .op_type = kWork, .inputs = std::move(inputs)};
  def.stream_index = stream;
  def.register_num = cap;
  def.elem_cnt = elem_cnt;
  def.attrs["iters"] = IntAttr(iters);
  return def;
}

std::unique_ptr<Session> MustCreate(const std::vector<TaskDef>& tasks,
                                    SessionOptions options) {
  auto plan = BuildPlan(tasks, 0);
  if (!plan.ok()) {
    std::fprintf(stderr, "peer_suite: %s\n", plan.status().ToString().c_str());
    std::exit(1);
  }
  auto session = Session::Create(*std::move(plan), std::move(options));
  if (!session.ok()) {
    std::fprintf(stderr, "peer_suite: %s\n",
                 session.status().ToString().c_str());
    std::exit(1);
  }
  return *std::move(session);
}

void MustRun(Session* session, int64_t pieces) {
  auto stats = session->Run(pieces);
  if (!stats.ok()) {
    std::fprintf(stderr, "peer_suite: %s\n", stats.status().ToString().c_str());
    std::exit(1);
  }
}

}  // namespace

// Stage i on stream i * threads / stages: consecutive stages share a
// thread, so an item crosses threads `threads - 1` times.
Cost Pipeline(const PipelineSpec& spec) {
  const int threads =
      spec.placement_threads > 0 ? spec.placement_threads : spec.threads;
  std::vector<TaskDef> tasks;
  for (int i = 0; i < spec.stages; ++i) {
    std::vector<std::string> inputs;
    if (i > 0) inputs = {"s" + std::to_string(i - 1)};
    tasks.push_back(Work("s" + std::to_string(i), inputs,
                         i * threads / spec.stages, spec.cap, spec.work_iters));
  }
  tasks.back().has_output = false;
  auto session = MustCreate(tasks, Options());
  MustRun(session.get(), 16);  // warm: queues at their working size
  return Measure(static_cast<double>(spec.items) * spec.stages,
                 [&] { MustRun(session.get(), spec.items); });
}

// The source stamps each act; with one register it cannot act again until
// the sink on the other thread has returned the last one.
std::vector<double> PingPong(const PingPongSpec& spec) {
  StampKernel stamp(spec.rounds + 1);
  SessionOptions options = Options();
  options.kernels.BindObject(kStamp, &stamp);
  TaskDef source{.name = "ping", .op_type = kStamp};
  source.register_num = 1;
  source.elem_cnt = 1;
  TaskDef sink = Work("pong", {"ping"}, 1, 1, 0);
  sink.has_output = false;
  auto session = MustCreate({source, sink}, std::move(options));
  MustRun(session.get(), spec.rounds + 1);
  std::vector<double> rtt;
  const auto& s = stamp.stamps();
  for (size_t i = 1; i < s.size(); ++i) rtt.push_back(s[i] - s[i - 1]);
  return rtt;
}

// Source and join on stream 0, branch b on stream b % threads.
Cost Fan(const FanSpec& spec) {
  std::vector<TaskDef> tasks;
  tasks.push_back(Work("source", {}, 0, spec.cap, 0));
  std::vector<std::string> branches;
  for (int b = 0; b < spec.branches; ++b) {
    branches.push_back("b" + std::to_string(b));
    tasks.push_back(Work(branches.back(), {"source"}, b % spec.threads,
                         spec.cap, spec.work_iters));
  }
  tasks.push_back(Work("join", branches, 0, spec.cap, 0));
  tasks.back().has_output = false;
  auto session = MustCreate(tasks, Options());
  MustRun(session.get(), 16);
  return Measure(static_cast<double>(spec.items) * spec.branches,
                 [&] { MustRun(session.get(), spec.items); });
}

// Both sources on stream 1, the consumer on stream 0; the consumer's act
// takes one register of each, so it spins twice the work.
Cost Overload(const OverloadSpec& spec) {
  std::vector<TaskDef> tasks;
  for (const char* name : {"p0", "p1"}) {
    tasks.push_back(Work(name, {}, 1, 2, 0, spec.payload_floats));
    tasks.back().attrs["fill"] = BoolAttr(true);
  }
  tasks.push_back(Work("consumer", {"p0", "p1"}, 0, 2, 2 * spec.work_iters));
  tasks.back().has_output = false;
  auto session = MustCreate(tasks, Options());
  return Measure(2.0 * spec.items, [&] { MustRun(session.get(), spec.items); });
}

}  // namespace actorflow::internal::bench::actorflow_peer
