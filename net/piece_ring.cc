#include "net/piece_ring.h"

#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::net {

PieceRing::PieceRing(std::unique_ptr<SharedSegment> segment, int32_t entries,
                     int64_t entry_bytes)
    : segment_(std::move(segment)),
      entries_(entries),
      entry_bytes_(entry_bytes) {}

absl::StatusOr<std::unique_ptr<PieceRing>> PieceRing::Create(
    int32_t entries, int64_t header_bytes) {
  if (entries < 1 || header_bytes < 0 || header_bytes > (1 << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a piece ring of ", entries, " entries of ", header_bytes, " bytes"));
  }
  // Entries on cache-line multiples, so a header never shares a line with
  // the next one the sender writes.
  const int64_t entry_bytes = (kLengthBytes + header_bytes + 63) / 64 * 64;
  absl::StatusOr<std::unique_ptr<SharedSegment>> segment =
      SharedSegment::Create(kEntriesAt + entries * entry_bytes);
  if (!segment.ok()) return segment.status();
  auto* layout = new ((*segment)->data() + SharedSegment::kHeaderBytes) Layout;
  layout->entries = static_cast<uint32_t>(entries);
  layout->entry_bytes = static_cast<uint32_t>(entry_bytes);
  layout->receiver_waits.store(0, std::memory_order_relaxed);
  // The receiver opens the ring after reading its name in a piece that
  // went through gRPC, after this store.
  layout->published.store(0, std::memory_order_release);
  return std::unique_ptr<PieceRing>(
      new PieceRing(*std::move(segment), entries, entry_bytes));
}

absl::StatusOr<std::unique_ptr<PieceRing>> PieceRing::Open(
    const std::string& name) {
  absl::StatusOr<std::unique_ptr<SharedSegment>> segment =
      SharedSegment::Open(name);
  if (!segment.ok()) return segment.status();
  const int64_t room = (*segment)->size() - SharedSegment::kHeaderBytes;
  if (room < kEntriesAt) {
    return absl::DataLossError(absl::StrCat("piece ring ", name, ": ", room,
                                            " bytes hold no ring layout"));
  }
  const auto* layout = reinterpret_cast<const Layout*>(
      (*segment)->data() + SharedSegment::kHeaderBytes);
  const int64_t entries = layout->entries;
  const int64_t entry_bytes = layout->entry_bytes;
  // (Each bound alone: their product may not fit in 64 bits.)
  if (entries < 1 || entry_bytes <= kLengthBytes ||
      entry_bytes > room - kEntriesAt ||
      entries > (room - kEntriesAt) / entry_bytes) {
    return absl::DataLossError(absl::StrCat(
        "piece ring ", name, ": ", entries, " entries of ", entry_bytes,
        " bytes do not fit its ", room - kEntriesAt, " bytes"));
  }
  return std::unique_ptr<PieceRing>(new PieceRing(
      *std::move(segment), static_cast<int32_t>(entries), entry_bytes));
}

bool PieceRing::Publish(absl::string_view header) {
  char* at = entry(published_);
  const auto length = static_cast<uint32_t>(header.size());
  std::memcpy(at, &length, kLengthBytes);
  std::memcpy(at + kLengthBytes, header.data(), header.size());
  ++published_;
  Layout* l = layout();
  l->published.store(published_, std::memory_order_seq_cst);
  return l->receiver_waits.load(std::memory_order_seq_cst) != 0 &&
         l->receiver_waits.exchange(0, std::memory_order_seq_cst) != 0;
}

absl::StatusOr<absl::string_view> PieceRing::Front() const {
  const uint64_t published = Published();
  if (published - popped_ > static_cast<uint64_t>(entries_)) {
    return absl::DataLossError(
        absl::StrCat("piece ring ", name(), ": the sender published ",
                     published, " pieces, ", published - popped_, " past the ",
                     popped_, " taken, more than its ", entries_, " entries"));
  }
  const char* at = entry(popped_);
  uint32_t length = 0;
  std::memcpy(&length, at, kLengthBytes);
  if (length > max_header_bytes()) {
    return absl::DataLossError(
        absl::StrCat("piece ring ", name(), ": entry ", popped_, " says ",
                     length, " bytes, more than its ", max_header_bytes()));
  }
  return absl::string_view(at + kLengthBytes, length);
}

bool PieceRing::WaitUnlessPiece() {
  Layout* l = layout();
  l->receiver_waits.store(1, std::memory_order_seq_cst);
  if (!HasPiece()) return false;
  l->receiver_waits.store(0, std::memory_order_relaxed);
  return true;
}

}  // namespace actorflow::internal::net
