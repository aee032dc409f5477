#ifndef ACTORFLOW_NET_BLOB_CODEC_H_
#define ACTORFLOW_NET_BLOB_CODEC_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "net/piece_codec.h"
#include "proto/net.pb.h"

namespace actorflow::internal::net {

// A blob's bytes into a slice for its piece's message, as they are or as
// one zstd frame (JobConfig::net_compress). One per sending edge: it keeps
// zstd's context and a scratch buffer between pieces. Not thread-safe: one
// caller at a time (the edge's net_send).
class BlobPacker {
 public:
  explicit BlobPacker(bool compress);
  ~BlobPacker();

  // The wire bytes of `bytes` bytes at `data` (piece's codec and
  // wire_bytes set to match): compressed only where that makes them
  // smaller; otherwise RAW, one copy.
  grpc::Slice Pack(const void* data, int64_t bytes, BlobPiece* piece);
  // Whether Pack may compress (the edge's compression is on).
  bool compresses() const { return zstd_ != nullptr; }
  // The RAW wire bytes of `bytes` bytes at `data` as a slice over that
  // memory, no copy: `destroy(user_data)` runs once gRPC and every copy of
  // the slice are done with it, and the bytes must stay until then.
  grpc::Slice Refer(const void* data, int64_t bytes, BlobPiece* piece,
                    void (*destroy)(void*), void* user_data);

  // Bytes given to Pack and bytes it put in pieces, since construction.
  int64_t packed_bytes() const { return packed_bytes_; }
  int64_t wire_bytes() const { return wire_bytes_; }

 private:
  struct Zstd;
  std::unique_ptr<Zstd> zstd_;  // null: no compression
  int64_t packed_bytes_ = 0;
  int64_t wire_bytes_ = 0;
};

// The receiving side: a blob's wire bytes, decompressed if its BlobPiece
// says so, into `bytes` bytes at `out`. One per receiving edge, one caller at a
// time.
class BlobUnpacker {
 public:
  BlobUnpacker();
  ~BlobUnpacker();

  // DataLoss when the data does not hold exactly `bytes` bytes (a RAW
  // piece of another size, a damaged or truncated frame), InvalidArgument
  // for a codec this build does not know; the message says what was found.
  absl::Status Unpack(const BlobPiece& piece, const WireBytes& data, void* out,
                      int64_t bytes);

 private:
  struct Zstd;
  std::unique_ptr<Zstd> zstd_;  // made at the first compressed piece
  std::string scratch_;         // a frame that spans slices, made contiguous
};

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_BLOB_CODEC_H_
