// What compiling a plan once buys, and what crossing into a plan costs:
//
//   start-up   RunPlan of a 4-task plan for 1 piece (validate, infer shapes,
//              create and Init kernels, allocate registers, start and join
//              threads) against Run(1) of a Session of the same plan.
//   feed/fetch one Feed and the matching Fetch through a 4-task plan (feed
//              -> identity -> identity -> fetch, one stream), one piece in
//              flight, against the same two copies done by a worker thread
//              reached through std::mutex/condvar queues.
//
// Prints medians (measurements alternated, so both see the same machine)
// and the per-pair ratio. Run:
//
//   tools/bazel run //bench:session_bench
//   tools/bazel run //bench:session_bench -- --samples=21 --round-trips=5000
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#include "actorflow/session.h"
#include "bench/bench_util.h"
#include "bench/mutex_channel.h"
#include "plan/plan_builder.h"
#include "runtime/runtime.h"

namespace actorflow::internal::bench {
namespace {

constexpr int64_t kElems = 256;  // float32 per piece

struct Config {
  int64_t samples = 11;
  int64_t startups = 20;       // runs per start-up sample
  int64_t round_trips = 2000;  // per feed/fetch sample
};

void Die(const absl::Status& status) {
  std::fprintf(stderr, "session_bench: %s\n", status.ToString().c_str());
  std::exit(1);
}

// source -> identity -> identity -> checksum, over two streams.
Plan FourTasks() {
  TaskDef src{.name = "src", .op_type = "source"};
  TaskDef a{.name = "a", .op_type = "identity", .inputs = {"src"}};
  TaskDef b{.name = "b", .op_type = "identity", .inputs = {"a"}};
  b.stream_index = 1;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"b"}};
  sink.stream_index = 1;
  sink.has_output = false;
  for (TaskDef* def : {&src, &a, &b}) def->elem_cnt = kElems;
  auto plan = BuildPlan({src, a, b, sink}, 1);
  if (!plan.ok()) Die(plan.status());
  return *plan;
}

// feed -> identity -> identity -> fetch, one stream.
Plan FeedToFetch() {
  TaskDef feed{.name = "in", .op_type = "feed"};
  feed.blobs = {BlobProto("x", DT_FLOAT32, {kElems})};
  TaskDef a{.name = "a", .op_type = "identity", .inputs = {"in"}};
  TaskDef b{.name = "b", .op_type = "identity", .inputs = {"a"}};
  a.infer_output = b.infer_output = true;
  TaskDef fetch{.name = "out", .op_type = "fetch", .inputs = {"b"}};
  fetch.has_output = false;
  auto plan = BuildPlan({feed, a, b, fetch}, 0);
  if (!plan.ok()) Die(plan.status());
  return *plan;
}

// ns per start-up: a whole RunPlan of one piece.
double RunPlanNs(const Plan& plan, int64_t n) {
  int64_t start = NowNs();
  for (int64_t i = 0; i < n; ++i) {
    auto result = RunPlan(plan);
    if (!result.ok()) Die(result.status());
    if (result->sinks.at("sink").pieces != 1) Die(absl::InternalError("sink"));
  }
  return static_cast<double>(NowNs() - start) / n;
}

double SessionRunNs(Session* session, int64_t n) {
  int64_t start = NowNs();
  for (int64_t i = 0; i < n; ++i) {
    auto stats = session->Run(1);
    if (!stats.ok()) Die(stats.status());
    if (stats->acts != 4) Die(absl::InternalError("acts"));
  }
  return static_cast<double>(NowNs() - start) / n;
}

double FeedFetchNs(Session* session, const Tensor& tensor, int64_t n) {
  int64_t start = NowNs();
  for (int64_t i = 0; i < n; ++i) {
    absl::Status fed = session->Feed("in", tensor);
    if (!fed.ok()) Die(fed);
    auto out = session->Fetch("out");
    if (!out.ok()) Die(out.status());
    if (out->elem_cnt() != kElems) Die(absl::InternalError("size"));
  }
  return static_cast<double>(NowNs() - start) / n;
}

// The baseline round trip: hand a buffer to a worker that copies it twice
// and hands the result back, through mutex/condvar queues.
class CopyWorker {
 public:
  CopyWorker() : worker_([this] { Loop(); }) {}
  ~CopyWorker() {
    to_worker_.Send(nullptr);
    worker_.join();
  }
  double RoundTripNs(const std::vector<float>& in, int64_t n) {
    std::vector<float> out(kElems);
    int64_t start = NowNs();
    for (int64_t i = 0; i < n; ++i) {
      std::memcpy(staged_.data(), in.data(), kElems * sizeof(float));
      to_worker_.Send(staged_.data());
      const float* result = from_worker_.Receive();
      std::memcpy(out.data(), result, kElems * sizeof(float));
    }
    if (out[0] != in[0]) Die(absl::InternalError("copy"));
    return static_cast<double>(NowNs() - start) / n;
  }

 private:
  void Loop() {
    while (float* buffer = to_worker_.Receive()) {
      std::memcpy(a_.data(), buffer, kElems * sizeof(float));
      std::memcpy(b_.data(), a_.data(), kElems * sizeof(float));
      from_worker_.Send(b_.data());
    }
  }
  std::vector<float> staged_ = std::vector<float>(kElems);
  std::vector<float> a_ = std::vector<float>(kElems);
  std::vector<float> b_ = std::vector<float>(kElems);
  MutexChannel<float*> to_worker_;
  MutexChannel<const float*> from_worker_;
  std::thread worker_;
};

void Row(const char* name, const Paired& m, const char* baseline_name) {
  std::printf("  %-28s %10.1f us   %-22s %10.1f us   %7.1fx\n", name,
              m.subject / 1e3, baseline_name, m.baseline / 1e3, m.ratio);
}

int Main(int argc, char** argv) {
  Config config;
  ParseFlags("session_bench", argc, argv,
             {{"samples", &config.samples, "measurements per figure"},
              {"startups", &config.startups, "runs per start-up measurement"},
              {"round-trips", &config.round_trips,
               "round trips per feed/fetch measurement"}},
             "Start-up of RunPlan against Run(1) of a Session, and a "
             "Feed-to-Fetch round trip against a mutex/condvar worker, in one "
             "run (medians).");
  const int samples = static_cast<int>(config.samples);

  Plan four = FourTasks();
  auto session = Session::Create(four);
  if (!session.ok()) Die(session.status());
  std::printf("start-up of one run of a 4-task plan, 1 piece (us per run)\n");
  Paired startup = PairedMedians(
      samples, [&] { return SessionRunNs(session->get(), config.startups); },
      [&] { return RunPlanNs(four, config.startups); });
  Row("Session::Run(1)", startup, "RunPlan (compile+run)");

  auto feeding = Session::Create(FeedToFetch());
  if (!feeding.ok()) Die(feeding.status());
  std::vector<float> values(kElems, 1.5f);
  auto tensor = Tensor::FromValues<float>({kElems}, values);
  if (!tensor.ok()) Die(tensor.status());
  CopyWorker worker;
  std::printf("\nFeed-to-Fetch round trip, 4-task plan, %lld floats (us)\n",
              static_cast<long long>(kElems));
  Paired trip = PairedMedians(
      samples,
      [&] { return FeedFetchNs(feeding->get(), *tensor, config.round_trips); },
      [&] { return worker.RoundTripNs(values, config.round_trips); });
  Row("Feed + Fetch", trip, "mutex/condvar worker");
  absl::Status closed = (*feeding)->CloseFeeds();
  if (!closed.ok()) Die(closed);
  auto drained = (*feeding)->Fetch("out");
  if (!absl::IsOutOfRange(drained.status())) Die(drained.status());
  auto stats = (*feeding)->Wait();
  if (!stats.ok()) Die(stats.status());
  std::printf("\n(ratio: baseline / actorflow, median of pairs)\n");
  return 0;
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  return actorflow::internal::bench::Main(argc, argv);
}
