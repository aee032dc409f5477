// Random plans of 1 to 120+ tasks over several threads must produce exactly
// the checksums a sequential evaluation predicts. Seeded; the seed is
// printed and ACTORFLOW_SEED replays it.
#include <catch2/catch.hpp>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "plan/plan_builder.h"
#include "runtime/runtime.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

struct RandomPlan {
  std::vector<TaskDef> tasks;
  int64_t pieces = 0;
};

// `n` tasks before the sinks that catch unread outputs.
RandomPlan MakeRandomPlan(std::mt19937_64& rng, int n) {
  auto uniform = [&rng](int lo, int hi) {
    return std::uniform_int_distribution<int>(lo, hi)(rng);
  };
  auto real = [&rng](double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(rng);
  };
  RandomPlan plan;
  plan.pieces = uniform(0, 150);
  int threads = uniform(1, 6);
  // Half the plans put some streams on host asynchronous streams, whose
  // actors send from stream callbacks (the GPU protocol).
  int async_streams = uniform(0, 1) ? uniform(0, (1 << threads) - 1) : 0;
  int64_t elem_cnt = uniform(0, 16);
  std::vector<std::string> producers;  // tasks with an output
  std::map<std::string, int> consumers;
  for (int i = 0; i < n; ++i) {
    TaskDef def;
    def.name = "t" + std::to_string(i);
    def.stream_index = uniform(0, threads - 1);
    def.host_async = (async_streams >> def.stream_index) & 1;
    def.register_num = uniform(1, 4);
    def.elem_cnt = elem_cnt;
    int kind = producers.empty() ? 0 : uniform(0, 9);
    auto pick = [&] {
      const std::string& p = producers[uniform(0, producers.size() - 1)];
      ++consumers[p];
      return p;
    };
    if (kind == 0) {
      def.op_type = "source";
      def.attrs["value"] = FloatAttr(std::round(real(-50, 50)));
      def.attrs["step"] = FloatAttr(real(-1, 1));
    } else if (kind <= 3) {
      def.op_type = "scale";
      def.attrs["factor"] = FloatAttr(real(0.25, 1.1));
      def.inputs = {pick()};
    } else if (kind <= 5) {
      def.op_type = "identity";
      def.inputs = {pick()};
    } else if (kind <= 8) {
      def.op_type = "add";
      int k = uniform(1, 3);
      for (int j = 0; j < k; ++j) {
        std::string input = pick();
        bool repeat = false;
        for (const std::string& in : def.inputs) repeat |= in == input;
        if (repeat) {
          --consumers[input];
        } else {
          def.inputs.push_back(input);
        }
      }
    } else {
      def.op_type = "checksum";
      def.inputs = {pick()};
      def.has_output = false;
    }
    if (def.has_output) producers.push_back(def.name);
    plan.tasks.push_back(def);
  }
  // Every output nobody reads gets a checksum, so every value is checked.
  for (const std::string& p : producers) {
    if (consumers[p] > 0) continue;
    TaskDef sink{.name = "sink_" + p, .op_type = "checksum", .inputs = {p}};
    sink.stream_index = uniform(0, threads - 1);
    sink.host_async = (async_streams >> sink.stream_index) & 1;
    sink.elem_cnt = elem_cnt;  // what it reads; the evaluator sums that many
    sink.has_output = false;
    plan.tasks.push_back(sink);
  }
  return plan;
}

// The same arithmetic as the built-in kernels, one piece at a time. Every
// register of a piece holds one value in all its elements.
std::map<std::string, SinkSummary> Evaluate(const RandomPlan& plan) {
  std::map<std::string, SinkSummary> sinks;
  for (int64_t p = 0; p < plan.pieces; ++p) {
    std::map<std::string, float> value;
    for (const TaskDef& def : plan.tasks) {
      float v = 0;
      if (def.op_type == "source") {
        v = static_cast<float>(def.attrs.at("value").f() +
                               static_cast<double>(p) *
                                   def.attrs.at("step").f());
      } else if (def.op_type == "scale") {
        v = static_cast<float>(static_cast<double>(value[def.inputs[0]]) *
                               def.attrs.at("factor").f());
      } else if (def.op_type == "identity") {
        v = value[def.inputs[0]];
      } else if (def.op_type == "add") {
        v = value[def.inputs[0]];
        for (size_t k = 1; k < def.inputs.size(); ++k) {
          v += value[def.inputs[k]];
        }
      } else {
        SinkSummary& sink = sinks[def.name];
        double sum = 0;
        for (int64_t i = 0; i < def.elem_cnt; ++i) sum += value[def.inputs[0]];
        sink.checksum += sum;
        ++sink.pieces;
        continue;
      }
      value[def.name] = v;
    }
  }
  for (const TaskDef& def : plan.tasks) {
    if (def.op_type == "checksum") sinks[def.name];  // pieces 0 too
  }
  return sinks;
}

bool SameDouble(double a, double b) {
  return std::memcmp(&a, &b, sizeof(double)) == 0 ||
         (std::isnan(a) && std::isnan(b));
}

TEST_CASE("random plans match a sequential evaluation bit for bit",
          "[runtime][random]") {
  uint64_t seed = testing::TestSeed("random plans");
  std::mt19937_64 rng(seed);
  constexpr int kPlans = 40;
  int max_tasks = 0;
  int async_tasks = 0;
  int batched_plans = 0;
  for (int round = 0; round < kPlans; ++round) {
    // The smallest and the largest sizes come first, then any.
    int n = round == 0   ? 1
            : round == 1 ? 120
                         : static_cast<int>(rng() % 120) + 1;
    RandomPlan random = MakeRandomPlan(rng, n);
    max_tasks = std::max<int>(max_tasks, random.tasks.size());
    for (const TaskDef& def : random.tasks) async_tasks += def.host_async;
    // Half the plans batch deliveries on every thread, whatever its size
    // (SessionOptions::batch_deliveries_from).
    const bool batched = rng() % 2 == 0;
    batched_plans += batched;
    INFO("seed " << seed << ", plan " << round << ": " << random.tasks.size()
                 << " tasks, " << random.pieces << " pieces"
                 << (batched ? ", deliveries batched" : ""));
    auto plan = BuildPlan(random.tasks, random.pieces);
    REQUIRE(plan.ok());
    std::map<std::string, SinkSummary> expected = Evaluate(random);
    // As the machine places its streams; then on two CPUs with threads
    // that run any stream, where the plain CPU streams outnumber them
    // (StreamSharing::kAnyThread).
    for (bool pooled : {false, true}) {
      INFO((pooled ? "any thread runs any stream" : "default placement"));
      RunOptions options;
      if (batched) options.batch_deliveries_from = 1;
      if (pooled) {
        options.usable_cpus = 2;
        options.stream_sharing = StreamSharing::kAnyThread;
      }
      auto result = RunPlan(*plan, options);
      INFO(result.status().ToString());
      REQUIRE(result.ok());
      REQUIRE(result->sinks.size() == expected.size());
      for (const auto& [name, want] : expected) {
        INFO("sink " << name);
        const SinkSummary& got = result->sinks.at(name);
        CHECK(got.pieces == random.pieces);
        CHECK(got.in_order);
        INFO("got " << got.checksum << " want " << want.checksum);
        CHECK(SameDouble(got.checksum, want.checksum));
      }
    }
  }
  std::printf(
      "random plans: %d plans (%d with deliveries batched), up to %d tasks, "
      "%d tasks on host async streams\n",
      kPlans, batched_plans, max_tasks, async_tasks);
}

}  // namespace
}  // namespace actorflow::internal
