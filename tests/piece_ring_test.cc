// PieceRing: the receiver gets every header in order across many turns of
// the ring, a receiver that said it waits always gets its doorbell, a
// sender that overran the ring and a segment that is not a ring are
// errors rather than garbage.
#include "net/piece_ring.h"

#include <catch2/catch.hpp>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace actorflow::internal::net {
namespace {

TEST_CASE("a ring opened by name gives the headers in order", "[shm]") {
  auto made = PieceRing::Create(4, 100);
  REQUIRE(made.ok());
  PieceRing& sender = **made;
  CHECK(sender.max_header_bytes() >= 100);
  auto opened = PieceRing::Open(sender.name());
  REQUIRE(opened.ok());
  PieceRing& receiver = **opened;
  CHECK(receiver.entries() == 4);
  CHECK(!receiver.HasPiece());
  // Ten turns of the ring, up to all four entries unpopped at once.
  int next = 0;
  for (int turn = 0; turn < 10; ++turn) {
    for (int k = 0; k < 4; ++k) {
      sender.Publish(std::string(turn + k, static_cast<char>('a' + k)));
    }
    for (int k = 0; k < 4; ++k, ++next) {
      REQUIRE(receiver.HasPiece());
      absl::StatusOr<absl::string_view> header = receiver.Front();
      REQUIRE(header.ok());
      CHECK(*header == std::string(turn + k, static_cast<char>('a' + k)));
      receiver.Pop();
    }
    CHECK(!receiver.HasPiece());
  }
  CHECK(next == 40);
}

TEST_CASE("a receiver that says it waits gets a doorbell for the next piece",
          "[shm]") {
  auto made = PieceRing::Create(2, 16);
  REQUIRE(made.ok());
  auto opened = PieceRing::Open((*made)->name());
  REQUIRE(opened.ok());
  // Nobody waits: no doorbell.
  CHECK(!(*made)->Publish("one"));
  // Waiting with a piece there: it says so, and stops waiting.
  CHECK((*opened)->WaitUnlessPiece());
  CHECK(!(*made)->Publish("two"));
  (*opened)->Pop();
  (*opened)->Pop();
  // Waiting on an empty ring: the next publish rings, once.
  CHECK(!(*opened)->WaitUnlessPiece());
  CHECK((*made)->Publish("three"));
  CHECK(!(*made)->Publish("four"));
}

// The sender publishes only with a credit (at most `entries` unpopped);
// the receiver parks on a doorbell whenever the ring is empty. A doorbell
// lost between the two would leave the receiver parked for good.
TEST_CASE("two threads move many headers with doorbells and credits", "[shm]") {
  constexpr int kPieces = 20000;
  constexpr int kEntries = 3;
  auto made = PieceRing::Create(kEntries, 32);
  REQUIRE(made.ok());
  auto opened = PieceRing::Open((*made)->name());
  REQUIRE(opened.ok());
  PieceRing& sender = **made;
  PieceRing& receiver = **opened;
  std::mutex mu;
  std::condition_variable changed;
  int credits = kEntries;  // under mu
  int doorbells = 0;       // under mu
  std::thread send([&] {
    for (int i = 0; i < kPieces; ++i) {
      {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock, [&] { return credits > 0; });
        --credits;
      }
      if (sender.Publish(absl::StrCat("piece ", i))) {
        std::lock_guard<std::mutex> lock(mu);
        ++doorbells;
        changed.notify_all();
      }
    }
  });
  int wrong = 0;
  int parked = 0;
  for (int i = 0; i < kPieces; ++i) {
    // As net_recv's gate does: a doorbell rung for a piece the receiver
    // found on its second look comes after it took that piece, so each
    // wake-up looks again.
    while (!receiver.HasPiece()) {
      std::unique_lock<std::mutex> lock(mu);
      const int seen = doorbells;
      if (receiver.WaitUnlessPiece()) break;
      ++parked;
      changed.wait(lock, [&] { return doorbells != seen; });
    }
    REQUIRE(receiver.HasPiece());
    absl::StatusOr<absl::string_view> header = receiver.Front();
    REQUIRE(header.ok());
    if (*header != absl::StrCat("piece ", i)) ++wrong;
    receiver.Pop();
    std::lock_guard<std::mutex> lock(mu);
    ++credits;
    changed.notify_all();
  }
  send.join();
  CHECK(wrong == 0);
  CHECK(!receiver.HasPiece());
  INFO("parked " << parked << " times");
  CHECK(parked > 0);
}

TEST_CASE("a sender past the ring's entries is data loss", "[shm]") {
  auto made = PieceRing::Create(2, 16);
  REQUIRE(made.ok());
  auto opened = PieceRing::Open((*made)->name());
  REQUIRE(opened.ok());
  for (int i = 0; i < 3; ++i) (*made)->Publish("x");
  absl::StatusOr<absl::string_view> header = (*opened)->Front();
  CHECK(header.status().code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(header.status().message(), "more than its 2"));
}

TEST_CASE("a segment that is not a ring does not open as one", "[shm]") {
  SECTION("sizes whose product overflows") {
    auto segment = SharedSegment::Create(16);
    REQUIRE(segment.ok());
    // Its page holds more than 16 bytes: all of them ones.
    std::memset((*segment)->data() + SharedSegment::kHeaderBytes, 0xff,
                (*segment)->size() - SharedSegment::kHeaderBytes);
    auto opened = PieceRing::Open((*segment)->name());
    CHECK(opened.status().code() == absl::StatusCode::kDataLoss);
  }
  SECTION("a layout past its end") {
    auto segment = SharedSegment::Create(4096);
    REQUIRE(segment.ok());
    std::memset((*segment)->data() + SharedSegment::kHeaderBytes, 0x7f,
                (*segment)->size() - SharedSegment::kHeaderBytes);
    auto opened = PieceRing::Open((*segment)->name());
    CHECK(opened.status().code() == absl::StatusCode::kDataLoss);
    CHECK(absl::StrContains(opened.status().message(), "do not fit"));
  }
  SECTION("nonsense sizes are refused at creation") {
    CHECK(PieceRing::Create(0, 16).status().code() ==
          absl::StatusCode::kInvalidArgument);
    CHECK(PieceRing::Create(4, -1).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
}

}  // namespace
}  // namespace actorflow::internal::net
