#ifndef ACTORFLOW_NET_PIECE_RING_H_
#define ACTORFLOW_NET_PIECE_RING_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "net/shared_segment.h"

namespace actorflow::internal::net {

// The headers of one edge's pieces between two ranks on one host, in a
// shared memory segment of the sender's (Transport). Their blobs already
// cross in shared memory slots; with the headers here too, a piece needs
// no message on the edge's gRPC stream, whose per-message cost (a write
// and a read through gRPC, a wake-up at each end) stalled both ranks'
// copies of 1 MiB pieces on 2 CPUs, costing them about a third of their
// speed. The stream carries only a doorbell (an empty message) for a piece
// published while the receiver said it waits.
//
// `entries` headers of at most max_header_bytes() each, in publishing
// order. The sender publishes only with a credit, and the receiver credits
// a piece after popping it, so no more than `entries` (the edge's
// register_num) are ever unpopped; the receiver still checks.
//
// Waking, without a lost doorbell: the receiver says it waits, then looks
// again; the sender publishes, then looks whether the receiver waits. Both
// are sequentially consistent, so one of the two looks sees the other's
// write.
class PieceRing {
 public:
  // A ring of `entries` headers of up to about `header_bytes` each.
  static absl::StatusOr<std::unique_ptr<PieceRing>> Create(
      int32_t entries, int64_t header_bytes);
  // The ring `name` (its name unlinked, as SharedSegment::Open does);
  // DataLoss if its layout does not fit its segment.
  static absl::StatusOr<std::unique_ptr<PieceRing>> Open(
      const std::string& name);

  const std::string& name() const { return segment_->name(); }
  int32_t entries() const { return entries_; }
  int64_t max_header_bytes() const { return entry_bytes_ - kLengthBytes; }

  // The sender: `header` as the next piece (it fits; the caller holds a
  // credit). True when the receiver had said it waits: the caller rings
  // the doorbell (the flag is cleared, so once).
  bool Publish(absl::string_view header);

  // The receiver: pieces published and not popped.
  int64_t Unpopped() const {
    return static_cast<int64_t>(Published() - popped_);
  }
  bool HasPiece() const { return Unpopped() > 0; }
  // The next piece's header, valid until Pop; DataLoss if the sender wrote
  // past the ring or an entry's length is out of range.
  absl::StatusOr<absl::string_view> Front() const;
  void Pop() { ++popped_; }
  // Before the receiver parks: says it waits, then looks again (true: a
  // piece came meanwhile, and it no longer says so; the sender may have
  // rung for that piece all the same, so a receiver looks again after
  // every doorbell).
  bool WaitUnlessPiece();

 private:
  // The segment's layout after its SharedSegment header: the published
  // count and the layout on one cache line, the waiting flag on the next,
  // then the entries (a length, then the header's bytes).
  struct Layout {
    std::atomic<uint64_t> published;
    uint32_t entries;
    uint32_t entry_bytes;
    alignas(64) std::atomic<uint32_t> receiver_waits;
  };
  static constexpr int64_t kEntriesAt = 128;
  static constexpr int64_t kLengthBytes = 4;
  static_assert(sizeof(Layout) <= kEntriesAt);

  PieceRing(std::unique_ptr<SharedSegment> segment, int32_t entries,
            int64_t entry_bytes);
  Layout* layout() const {
    return reinterpret_cast<Layout*>(segment_->data() +
                                     SharedSegment::kHeaderBytes);
  }
  char* entry(uint64_t index) const {
    return segment_->data() + SharedSegment::kHeaderBytes + kEntriesAt +
           static_cast<int64_t>(index % entries_) * entry_bytes_;
  }
  uint64_t Published() const {
    return layout()->published.load(std::memory_order_seq_cst);
  }

  std::unique_ptr<SharedSegment> segment_;
  const int32_t entries_;
  const int64_t entry_bytes_;
  uint64_t published_ = 0;  // the sender's
  uint64_t popped_ = 0;     // the receiver's
};

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_PIECE_RING_H_
