#ifndef ACTORFLOW_NET_PIECE_CODEC_H_
#define ACTORFLOW_NET_PIECE_CODEC_H_

#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "proto/net.pb.h"

// A register piece on the wire: one gRPC message of
//   varint32 n | n bytes of RegisterPiece (the header) | blob 0's bytes |
//   blob 1's bytes | ...
// where the header's BlobPiece.wire_bytes says how many bytes each blob has
// there. The blobs' bytes travel as slices of their own: gRPC writes them
// to the socket as they are and hands them to the reader as it read them,
// so a blob is copied once into its slice on the sending side and once out
// of the message into the register on the receiving side. A protobuf
// message with the bytes inside costs two more copies: serializing it and
// parsing it.
namespace actorflow::internal::net {

// Bytes [offset, offset + size) of a message's slices.
class WireBytes {
 public:
  WireBytes(const std::vector<grpc::Slice>* slices, int64_t offset,
            int64_t size)
      : slices_(slices), offset_(offset), size_(size) {}

  int64_t size() const { return size_; }
  // Copies all `size` bytes to `out`.
  void CopyTo(void* out) const;
  // The bytes in one run of memory: in place where one slice holds them
  // all, else copied into `scratch`. Valid while the message and `scratch`
  // are.
  const char* Contiguous(std::string* scratch) const;

 private:
  const std::vector<grpc::Slice>* slices_;
  int64_t offset_;
  int64_t size_;
};

// A slice of `bytes` bytes that the caller fills (gRPC's allocation,
// released when gRPC and every copy of the slice are done with it).
grpc::Slice NewSlice(int64_t bytes, uint8_t** data);

// The message for `header` (each blob's wire_bytes set) and the blobs'
// bytes, in blob order; `data` is taken (left empty).
grpc::ByteBuffer EncodePiece(const RegisterPiece& header,
                             std::vector<grpc::Slice>* data);

// A received piece: the header parsed, the blobs' bytes left in the
// message's slices. One per receiving edge, reused piece after piece.
class DecodedPiece {
 public:
  // DataLoss, naming what is wrong, when `message` is not a piece: no
  // header, a header that does not parse, or blobs' wire_bytes that do not
  // add up to the bytes after it.
  absl::Status Decode(const grpc::ByteBuffer& message);

  const RegisterPiece& header() const { return header_; }
  // Blob b's bytes on the wire; b < header().blob_size().
  WireBytes blob_bytes(int b) const {
    return WireBytes(&slices_, offsets_[b], header_.blob(b).wire_bytes());
  }

 private:
  RegisterPiece header_;
  std::vector<grpc::Slice> slices_;
  std::vector<int64_t> offsets_;  // each blob's first byte in the message
  std::string scratch_;           // a header that spans slices
};

}  // namespace actorflow::internal::net

#endif  // ACTORFLOW_NET_PIECE_CODEC_H_
