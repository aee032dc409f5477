// SharedSegment: what a receiving rank opens is what the sending rank
// wrote, the name is gone once opened, the busy flag passes a segment back
// and forth, and bad names or sizes are errors rather than crashes.
#include "net/shared_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace actorflow::internal::net {
namespace {

TEST_CASE("a segment opened by name holds what its creator wrote", "[shm]") {
  auto made = SharedSegment::Create(10000);
  REQUIRE(made.ok());
  SharedSegment& sender = **made;
  CHECK(sender.size() >= SharedSegment::kHeaderBytes + 10000);
  CHECK(absl::StartsWith(sender.name(), "/actorflow-"));
  char* payload = sender.data() + SharedSegment::kHeaderBytes;
  for (int i = 0; i < 10000; ++i) payload[i] = static_cast<char>(i * 7);

  auto opened = SharedSegment::Open(sender.name());
  REQUIRE(opened.ok());
  SharedSegment& receiver = **opened;
  CHECK(receiver.size() == sender.size());
  CHECK(std::memcmp(receiver.data() + SharedSegment::kHeaderBytes, payload,
                    10000) == 0);
  // Opening unlinked the name: nothing is left in /dev/shm.
  CHECK(shm_open(sender.name().c_str(), O_RDONLY, 0) < 0);
  auto again = SharedSegment::Open(sender.name());
  CHECK(again.status().code() == absl::StatusCode::kUnavailable);

  // Free at first; claimed until the receiver releases it.
  CHECK(sender.TryClaim());
  CHECK(!sender.TryClaim());
  receiver.Release();
  CHECK(sender.TryClaim());
}

TEST_CASE("two segments never share a name", "[shm]") {
  auto a = SharedSegment::Create(1);
  auto b = SharedSegment::Create(1);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK((*a)->name() != (*b)->name());
}

TEST_CASE("a segment /dev/shm cannot hold is an error, not a SIGBUS later",
          "[shm]") {
  // 1 PiB: the size is set, the memory cannot be reserved.
  auto made = SharedSegment::Create(int64_t{1} << 50);
  REQUIRE(!made.ok());
  CHECK(made.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(made.status().message(), "reserving"));
}

TEST_CASE("only names Create makes are opened", "[shm]") {
  for (const char* name :
       {"", "/", "/actorflow-", "/other", "/actorflow-a/b", "actorflow-1"}) {
    INFO(name);
    auto opened = SharedSegment::Open(name);
    REQUIRE(!opened.ok());
    CHECK(opened.status().code() == absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("the host id names this boot and this process's namespaces",
          "[shm]") {
  const std::string id = SharedMemoryHostId();
  REQUIRE(!id.empty());
  CHECK(absl::StrContains(id, "net:["));
  CHECK(absl::StrContains(id, "mnt:["));
  CHECK(absl::StrContains(id, absl::StrCat(" uid ", geteuid())));
  CHECK(id == SharedMemoryHostId());
}

}  // namespace
}  // namespace actorflow::internal::net
