#ifndef ACTORFLOW_TESTS_TEST_UTIL_H_
#define ACTORFLOW_TESTS_TEST_UTIL_H_

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <random>
#include <string>
#include <thread>

#include "absl/status/status.h"

// Requires an absl::Status to be OK, showing it when it is not.
#define REQUIRE_OK(expr)                 \
  do {                                   \
    const absl::Status status_ = (expr); \
    INFO(status_.ToString());            \
    REQUIRE(status_.ok());               \
  } while (0)

namespace actorflow::internal::testing {

// Seed for randomized tests: $ACTORFLOW_SEED if set (to replay a failure),
// else fresh. Always printed, with how to replay it.
inline uint64_t TestSeed(const char* test_name) {
  uint64_t seed;
  if (const char* env = std::getenv("ACTORFLOW_SEED")) {
    seed = std::strtoull(env, nullptr, 10);
  } else {
    seed = (uint64_t{std::random_device{}()} << 32) | std::random_device{}();
  }
  std::printf("%s: seed %llu (replay: ACTORFLOW_SEED=%llu)\n", test_name,
              static_cast<unsigned long long>(seed),
              static_cast<unsigned long long>(seed));
  return seed;
}

// An empty directory `name` under the test's scratch space ($TEST_TMPDIR
// under bazel test, else /tmp), made anew.
inline std::string TestTempDir(const std::string& name) {
  const char* root = std::getenv("TEST_TMPDIR");
  const std::filesystem::path dir =
      std::filesystem::path(root ? root : "/tmp") / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir.string();
}

// Waits for a condition that another thread will make true, yielding the
// CPU. Not a sleep: it returns as soon as the condition holds. The deadline
// only turns a hang into a failure.
inline bool WaitUntil(
    const std::function<bool()>& condition,
    std::chrono::seconds deadline = std::chrono::seconds(30)) {
  auto end = std::chrono::steady_clock::now() + deadline;
  while (!condition()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

}  // namespace actorflow::internal::testing

#endif  // ACTORFLOW_TESTS_TEST_UTIL_H_
