// ns per act of the actor runtime on an 8-stage pipeline (source, 6
// identity stages, checksum) and a two-actor ping-pong, each beside a
// straightforward design measured in the same run: a direct loop for one
// thread, and threads joined by std::mutex + std::condition_variable queues
// for two. Prints medians and ratios. Run:
//
//   tools/bazel run //bench:runtime_bench
//   tools/bazel run //bench:runtime_bench -- --pieces=200000 --samples=11
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_util.h"
#include "bench/mutex_channel.h"
#include "plan/plan_builder.h"
#include "runtime/runtime.h"

namespace actorflow::internal::bench {
namespace {

constexpr int kStages = 8;
constexpr int64_t kElemCnt = 1;

struct Config {
  int64_t samples = 7;
  int64_t pieces = 100'000;
  int64_t ping_pong_pieces = 20'000;
};

// source -> identity x6 -> checksum; stage i runs on stream i / split.
Plan Pipeline(int threads, int register_num) {
  std::vector<TaskDef> tasks;
  for (int i = 0; i < kStages; ++i) {
    TaskDef def;
    def.name = i == kStages - 1 ? "sink" : "stage" + std::to_string(i);
    def.op_type = i == 0             ? "source"
                  : i == kStages - 1 ? "checksum"
                                     : "identity";
    if (i > 0) {
      def.inputs = {i == 1 ? "stage0" : "stage" + std::to_string(i - 1)};
    }
    def.stream_index = i * threads / kStages;
    def.register_num = register_num;
    def.elem_cnt = kElemCnt;
    def.has_output = i < kStages - 1;
    tasks.push_back(def);
  }
  auto plan = BuildPlan(tasks, 0);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s\n", plan.status().ToString().c_str());
    std::exit(1);
  }
  return *plan;
}

// Source on one thread, checksum on another, one register: every piece is a
// message there and a return back.
Plan PingPong() {
  TaskDef source{.name = "source", .op_type = "source"};
  source.register_num = 1;
  source.elem_cnt = kElemCnt;
  TaskDef sink{.name = "sink", .op_type = "checksum", .inputs = {"source"}};
  sink.stream_index = 1;
  sink.has_output = false;
  return *BuildPlan({source, sink}, 0);
}

// Wall time of one run, in ns, divided by `per`.
// Runs `pieces` and returns ns per `per` unit; exits if the run did not do
// every act of every piece, in order.
double RunNs(const Plan& plan, int64_t pieces, double per) {
  RunOptions options;
  options.pieces = pieces;
  auto result = RunPlan(plan, options);
  int64_t expected_acts = pieces * plan.task_size();
  if (!result.ok() || result->sinks.at("sink").pieces != pieces ||
      !result->sinks.at("sink").in_order || result->acts != expected_acts) {
    std::fprintf(stderr, "run failed: %s\n",
                 result.ok() ? "wrong act count or order"
                             : result.status().ToString().c_str());
    std::exit(1);
  }
  return result->wall_ms * 1e6 / per;
}

// --- the straightforward designs ------------------------------------------

// One stage of the baseline: what the kernels do, on plain buffers.
void Stage(int i, int64_t piece, const float* in, float* out, double* sum) {
  if (i == 0) {
    for (int64_t e = 0; e < kElemCnt; ++e) out[e] = static_cast<float>(piece);
  } else if (i == kStages - 1) {
    for (int64_t e = 0; e < kElemCnt; ++e) *sum += in[e];
  } else {
    std::memcpy(out, in, kElemCnt * sizeof(float));
  }
}

// All stages in a plain loop: the floor for one thread.
double DirectLoopNs(int64_t pieces) {
  std::vector<std::vector<float>> buf(kStages, std::vector<float>(kElemCnt));
  double sum = 0;
  int64_t start = NowNs();
  for (int64_t p = 0; p < pieces; ++p) {
    for (int i = 0; i < kStages; ++i) {
      Stage(i, p, i == 0 ? nullptr : buf[i - 1].data(), buf[i].data(), &sum);
    }
  }
  int64_t elapsed = NowNs() - start;
  if (sum < 0) std::printf("impossible\n");  // keep the loop
  return static_cast<double>(elapsed) / (pieces * kStages);
}

// Two threads, each running half the stages, handing `buffers` piece
// buffers forward and back through mutex/condvar queues.
double MutexPipelineNs(int64_t pieces, int buffers) {
  using Piece = std::vector<float>*;
  MutexChannel<Piece> forward, back;
  std::vector<std::vector<float>> storage(buffers,
                                          std::vector<float>(kElemCnt));
  for (auto& b : storage) back.Send(&b);
  double sum = 0;
  std::thread second([&] {
    std::vector<float> scratch(kElemCnt);
    for (int64_t p = 0; p < pieces; ++p) {
      Piece piece = forward.Receive();
      for (int i = kStages / 2; i < kStages; ++i) {
        Stage(i, p, piece->data(), scratch.data(), &sum);
      }
      back.Send(piece);
    }
  });
  std::vector<float> scratch(kElemCnt);
  int64_t start = NowNs();
  for (int64_t p = 0; p < pieces; ++p) {
    Piece piece = back.Receive();
    for (int i = 0; i < kStages / 2; ++i) {
      Stage(i, p, scratch.data(), piece->data(), &sum);
    }
    forward.Send(piece);
  }
  second.join();
  int64_t elapsed = NowNs() - start;
  return static_cast<double>(elapsed) / (pieces * kStages);
}

// Round trip through two mutex/condvar queues, one piece in flight.
double MutexPingPongNs(int64_t pieces) {
  MutexChannel<int64_t> ping, pong;
  std::thread echo([&] {
    for (int64_t p = 0; p < pieces; ++p) pong.Send(ping.Receive());
  });
  int64_t start = NowNs();
  for (int64_t p = 0; p < pieces; ++p) {
    ping.Send(p);
    pong.Receive();
  }
  int64_t elapsed = NowNs() - start;
  echo.join();
  return static_cast<double>(elapsed) / pieces;
}

constexpr char kHelp[] =
    "runtime_bench: ns per act of the actor runtime beside a direct loop\n"
    "and a mutex/condvar design, in one run (medians).";

void Row(const char* name, const Paired& m, const char* baseline_name,
         const char* target) {
  std::printf("  %-34s %8.1f ns   %-14s %9.1f ns   %7.2fx   %s\n", name,
              m.subject, baseline_name, m.baseline, m.ratio, target);
}

int Main(int argc, char** argv) {
  Config config;
  ParseFlags("runtime_bench", argc, argv,
             {{"samples", &config.samples, "runs per figure"},
              {"pieces", &config.pieces, "pieces per pipeline run"},
              {"ping-pong-pieces", &config.ping_pong_pieces,
               "pieces per ping-pong run"}},
             kHelp);
  std::printf(
      "runtime_bench: %u hardware threads, %lld pieces x %d stages, %lld "
      "samples (medians, taken alternately with the baseline); ratio = "
      "baseline / actorflow\n\n",
      std::thread::hardware_concurrency(),
      static_cast<long long>(config.pieces), kStages,
      static_cast<long long>(config.samples));
  double acts = static_cast<double>(config.pieces) * kStages;
  auto run = [&](const Plan& plan) {
    return [&config, &plan, acts] { return RunNs(plan, config.pieces, acts); };
  };

  std::printf("ns per act\n");
  Plan one = Pipeline(1, 2);
  Row("8 stages, 1 thread, register_num 2",
      PairedMedians(config.samples, run(one),
                    [&] { return DirectLoopNs(config.pieces); }),
      "direct loop", "(target <= 30 ns)");
  for (int register_num : {1, 2, 8}) {
    Plan two = Pipeline(2, register_num);
    std::string name =
        "8 stages, 2 threads, register_num " + std::to_string(register_num);
    Row(name.c_str(),
        PairedMedians(
            config.samples, run(two),
            [&] { return MutexPipelineNs(config.pieces, register_num); }),
        "mutex/condvar", register_num == 2 ? "(target <= 40 ns)" : "");
  }

  Plan ping_pong = PingPong();
  std::printf("\nround trip\n");
  Row("ping-pong across 2 threads",
      PairedMedians(
          config.samples,
          [&] {
            return RunNs(ping_pong, config.ping_pong_pieces,
                         static_cast<double>(config.ping_pong_pieces));
          },
          [&] { return MutexPingPongNs(config.ping_pong_pieces / 10); }),
      "mutex/condvar", "(target <= 500 ns)");
  return 0;
}

}  // namespace
}  // namespace actorflow::internal::bench

int main(int argc, char** argv) {
  return actorflow::internal::bench::Main(argc, argv);
}
