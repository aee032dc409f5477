// Every built-in kernel, one piece at a time, through KernelHarness.
#include <catch2/catch.hpp>
#include <chrono>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "actorflow/kernel_harness.h"
#include "plan/plan_builder.h"
#include "tests/test_util.h"

namespace actorflow::internal {
namespace {

// The task as KernelHarness::Create takes it (text format).
std::string Task(const std::string& op_type,
                 std::map<std::string, AttrValue> attrs = {}) {
  return KernelTaskText(op_type, attrs);
}

std::unique_ptr<KernelHarness> Make(const std::string& task, int inputs,
                                    bool output, int64_t elem_cnt = 4) {
  auto harness = KernelHarness::Create(task, inputs, output, elem_cnt);
  INFO(harness.status().ToString());
  REQUIRE(harness.ok());
  return std::move(*harness);
}

TEST_CASE("source: every element of piece p is value + p * step", "[kernels]") {
  auto h = Make(
      Task("source", {{"value", FloatAttr(1.5)}, {"step", FloatAttr(-0.25)}}),
      0, true);
  for (int64_t p : {0, 1, 7, 1000}) {
    REQUIRE(h->Run(p).ok());
    for (int i = 0; i < 4; ++i)
      CHECK(h->output_floats()[i] == 1.5f - 0.25f * p);
  }
  auto defaults = Make(Task("source"), 0, true);
  REQUIRE(defaults->Run(9).ok());
  CHECK(defaults->output_floats()[3] == 9.0f);
}

TEST_CASE("scale, identity and add", "[kernels]") {
  auto scale = Make(Task("scale", {{"factor", FloatAttr(-3)}}), 1, true);
  auto identity = Make(Task("identity"), 1, true);
  auto add = Make(Task("add"), 3, true);
  for (int i = 0; i < 4; ++i) {
    scale->input_floats(0)[i] = identity->input_floats(0)[i] = 0.5f + i;
    for (int k = 0; k < 3; ++k) add->input_floats(k)[i] = 10.0f * k + i;
  }
  REQUIRE(scale->Run(0).ok());
  REQUIRE(identity->Run(0).ok());
  REQUIRE(add->Run(0).ok());
  for (int i = 0; i < 4; ++i) {
    CHECK(scale->output_floats()[i] == -3.0f * (0.5f + i));
    CHECK(identity->output_floats()[i] == 0.5f + i);
    CHECK(add->output_floats()[i] == 30.0f + 3 * i);
  }
  auto add_one = Make(Task("add"), 1, true);
  add_one->input_floats(0)[2] = 4;
  REQUIRE(add_one->Run(0).ok());
  CHECK(add_one->output_floats()[2] == 4);
}

TEST_CASE("add: each element is ((t0 + t1) + t2) + ..., in input order",
          "[kernels]") {
  // More elements than one of the kernel's blocks (16 KiB), and not a
  // multiple of one; terms of mixed magnitudes, so that another order would
  // round differently in many elements.
  const uint64_t seed = testing::TestSeed("add_order");
  std::mt19937_64 random(seed);
  std::uniform_real_distribution<float> mantissa(-1, 1);
  std::uniform_int_distribution<int> exponent(-20, 20);
  constexpr int kTerms = 6;
  constexpr int64_t kElems = 10'007;
  auto add = Make(Task("add"), kTerms, true, kElems);
  std::vector<float> expected(kElems);
  for (int64_t i = 0; i < kElems; ++i) {
    float sum = 0;
    for (int k = 0; k < kTerms; ++k) {
      const float term = std::ldexp(mantissa(random), exponent(random));
      add->input_floats(k)[i] = term;
      sum = k == 0 ? term : sum + term;
    }
    expected[i] = sum;
  }
  REQUIRE(add->Run(0).ok());
  int64_t differs = 0;
  for (int64_t i = 0; i < kElems; ++i) {
    differs += add->output_floats()[i] != expected[i];
  }
  CHECK(differs == 0);
  // The reverse order gives other bits in some elements: the check above
  // can tell the orders apart.
  int64_t reverse_differs = 0;
  for (int64_t i = 0; i < kElems; ++i) {
    float sum = add->input_floats(kTerms - 1)[i];
    for (int k = kTerms - 2; k >= 0; --k) sum += add->input_floats(k)[i];
    reverse_differs += sum != expected[i];
  }
  CHECK(reverse_differs > 0);
}

TEST_CASE("checksum sums in double and notices pieces out of order",
          "[kernels]") {
  auto h = Make(Task("checksum"), 1, false, 3);
  h->input_floats(0)[0] = 1e8f;
  h->input_floats(0)[1] = 1.0f;
  h->input_floats(0)[2] = -1e8f;
  REQUIRE(h->Run(0).ok());
  REQUIRE(h->Run(1).ok());
  auto summary = h->kernel().sink_summary();
  REQUIRE(summary.has_value());
  CHECK(summary->pieces == 2);
  CHECK(summary->checksum == 2.0);  // float addition would lose the ones
  CHECK(summary->in_order);
  REQUIRE(h->Run(5).ok());  // pieces 2 to 4 never came
  CHECK_FALSE(h->kernel().sink_summary()->in_order);
  CHECK(h->kernel().sink_summary()->pieces == 3);
}

TEST_CASE("spin busy-waits at least `us`, then passes its input on",
          "[kernels]") {
  auto h = Make(Task("spin", {{"us", IntAttr(2000)}}), 1, true);
  h->input_floats(0)[1] = 42;
  auto start = std::chrono::steady_clock::now();
  REQUIRE(h->Run(0).ok());
  CHECK(std::chrono::steady_clock::now() - start >=
        std::chrono::microseconds(2000));
  CHECK(h->output_floats()[1] == 42);
  auto sink = Make(Task("spin", {{"us", IntAttr(0)}}), 1, false);
  CHECK(sink->Run(0).ok());
  auto negative =
      KernelHarness::Create(Task("spin", {{"us", IntAttr(-1)}}), 1, true, 4);
  CHECK(negative.status().message() ==
        "kernel.attr['us']: must be >= 0, got -1");
}

TEST_CASE("fail errs at its piece and is identity otherwise", "[kernels]") {
  auto h = Make(Task("fail", {{"at_piece", IntAttr(3)}}), 1, true);
  h->input_floats(0)[0] = 8;
  REQUIRE(h->Run(2).ok());
  CHECK(h->output_floats()[0] == 8);
  absl::Status status = h->Run(3);
  CHECK(absl::IsAborted(status));
  CHECK(status.message() == "fail kernel: reached at_piece 3");
  CHECK(h->Run(4).ok());
}

TEST_CASE("signatures are checked at Init", "[kernels]") {
  CHECK(KernelHarness::Create(Task("source"), 1, true, 4).status().message() ==
        "consumed_regst_desc_id['in']: source takes 0 inputs, got 1");
  CHECK(
      KernelHarness::Create(Task("identity"), 1, false, 4).status().message() ==
      "produced_regst_desc['out']: missing; identity produces \"out\"");
  CHECK(KernelHarness::Create(Task("add"), 0, true, 4).status().message() ==
        "consumed_regst_desc_id['in']: add takes at least 1 input, got 0");
  CHECK(absl::IsNotFound(
      KernelHarness::Create(Task("nope"), 1, true, 4).status()));
}

}  // namespace
}  // namespace actorflow::internal
