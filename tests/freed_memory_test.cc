// net::KeepFreedMemory: glibc keeps the blocks a job's transfers free, so
// the next ones are not paged in again; the environment can keep glibc's
// own policy.
#include "net/freed_memory.h"

#include <sys/resource.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace actorflow::internal::net {
namespace {

#if defined(ACTORFLOW_SANITIZED_ALLOCATOR) || \
    defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

long MinorFaults() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_minflt;
}

// Minor faults per round of what a busy edge does: 16 registers of 1 MiB
// in flight (allocated and written), then all freed; the median of 5
// rounds after 2 that warm up. 16 MiB is 4,096 pages.
long FaultsPerRound() {
  std::vector<long> rounds;
  for (int round = 0; round < 7; ++round) {
    const long before = MinorFaults();
    std::vector<char*> blocks;
    for (int i = 0; i < 16; ++i) {
      char* block = static_cast<char*>(std::malloc(1 << 20));
      std::memset(block, i, 1 << 20);
      blocks.push_back(block);
    }
    for (char* block : blocks) std::free(block);
    if (round >= 2) rounds.push_back(MinorFaults() - before);
  }
  std::sort(rounds.begin(), rounds.end());
  return rounds[rounds.size() / 2];
}

TEST_CASE("KeepFreedMemory: the environment decides, then blocks are reused",
          "[net]") {
  unsetenv("MALLOC_MMAP_THRESHOLD_");
  unsetenv("MALLOC_TRIM_THRESHOLD_");

  setenv("ACTORFLOW_KEEP_FREED_MEMORY", "yes", 1);
  absl::Status bad = KeepFreedMemory();
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(bad.message()),
             Catch::Contains("ACTORFLOW_KEEP_FREED_MEMORY") &&
                 Catch::Contains("'yes'"));

  // Turned off, or the user's own glibc settings: glibc's policy stays,
  // which hands the 16 MiB back at every round's end.
  setenv("ACTORFLOW_KEEP_FREED_MEMORY", "0", 1);
  REQUIRE(KeepFreedMemory().ok());
  if (!kSanitized) CHECK(FaultsPerRound() > 2000);
  unsetenv("ACTORFLOW_KEEP_FREED_MEMORY");
  setenv("MALLOC_TRIM_THRESHOLD_", "131072", 1);
  REQUIRE(KeepFreedMemory().ok());
  if (!kSanitized) CHECK(FaultsPerRound() > 2000);
  unsetenv("MALLOC_TRIM_THRESHOLD_");

  REQUIRE(KeepFreedMemory().ok());
  if (!kSanitized) CHECK(FaultsPerRound() < 200);
  // Once per process: a second job's call changes nothing more.
  setenv("ACTORFLOW_KEEP_FREED_MEMORY", "1", 1);
  REQUIRE(KeepFreedMemory().ok());
  unsetenv("ACTORFLOW_KEEP_FREED_MEMORY");
  if (!kSanitized) CHECK(FaultsPerRound() < 200);
}

}  // namespace
}  // namespace actorflow::internal::net
