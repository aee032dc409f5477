#include "net/blob_codec.h"

#include <zstd.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::net {
namespace {

// zstd's fastest level: registers are compressed on the sending rank's
// actor thread, so the level is chosen for speed over ratio.
constexpr int kLevel = 1;

}  // namespace

struct BlobPacker::Zstd {
  ZSTD_CCtx* context = ZSTD_createCCtx();
  ~Zstd() { ZSTD_freeCCtx(context); }
};

BlobPacker::BlobPacker(bool compress)
    : zstd_(compress ? std::make_unique<Zstd>() : nullptr) {}

BlobPacker::~BlobPacker() = default;

grpc::Slice BlobPacker::Pack(const void* data, int64_t bytes,
                             BlobPiece* piece) {
  packed_bytes_ += bytes;
  uint8_t* at = nullptr;
  if (zstd_ != nullptr && zstd_->context != nullptr && bytes > 0) {
    // Compressed straight into the message's slice; a frame no smaller
    // than the blob is dropped for the raw bytes.
    const size_t bound = ZSTD_compressBound(static_cast<size_t>(bytes));
    grpc::Slice frame = NewSlice(static_cast<int64_t>(bound), &at);
    const size_t got = ZSTD_compressCCtx(zstd_->context, at, bound, data,
                                         static_cast<size_t>(bytes), kLevel);
    if (!ZSTD_isError(got) && static_cast<int64_t>(got) < bytes) {
      piece->set_codec(BlobPiece::ZSTD);
      piece->set_wire_bytes(static_cast<int64_t>(got));
      wire_bytes_ += static_cast<int64_t>(got);
      return frame.sub(0, got);
    }
  }
  piece->set_codec(BlobPiece::RAW);
  piece->set_wire_bytes(bytes);
  wire_bytes_ += bytes;
  grpc::Slice raw = NewSlice(bytes, &at);
  if (bytes > 0) std::memcpy(at, data, bytes);
  return raw;
}

grpc::Slice BlobPacker::Refer(const void* data, int64_t bytes, BlobPiece* piece,
                              void (*destroy)(void*), void* user_data) {
  packed_bytes_ += bytes;
  piece->set_codec(BlobPiece::RAW);
  piece->set_wire_bytes(bytes);
  wire_bytes_ += bytes;
  return grpc::Slice(const_cast<void*>(data), static_cast<size_t>(bytes),
                     destroy, user_data);
}

struct BlobUnpacker::Zstd {
  ZSTD_DCtx* context = ZSTD_createDCtx();
  ~Zstd() { ZSTD_freeDCtx(context); }
};

BlobUnpacker::BlobUnpacker() = default;
BlobUnpacker::~BlobUnpacker() = default;

absl::Status BlobUnpacker::Unpack(const BlobPiece& piece, const WireBytes& data,
                                  void* out, int64_t bytes) {
  switch (piece.codec()) {
    case BlobPiece::RAW:
      if (data.size() != bytes) {
        return absl::DataLossError(
            absl::StrCat(data.size(), " bytes where ", bytes, " belong"));
      }
      data.CopyTo(out);
      return absl::OkStatus();
    case BlobPiece::ZSTD: {
      const char* frame = data.Contiguous(&scratch_);
      const unsigned long long size =  // NOLINT(runtime/int): zstd's type
          ZSTD_getFrameContentSize(frame, data.size());
      if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN) {
        return absl::DataLossError(absl::StrCat(
            "not a zstd frame with its size (", data.size(), " bytes)"));
      }
      if (static_cast<int64_t>(size) != bytes) {
        return absl::DataLossError(absl::StrCat(
            "a zstd frame of ", size, " bytes where ", bytes, " belong"));
      }
      if (zstd_ == nullptr) zstd_ = std::make_unique<Zstd>();
      if (zstd_->context == nullptr) {
        return absl::ResourceExhaustedError("zstd: no decompression context");
      }
      const size_t got = ZSTD_decompressDCtx(
          zstd_->context, out, static_cast<size_t>(bytes), frame, data.size());
      if (ZSTD_isError(got)) {
        return absl::DataLossError(
            absl::StrCat("zstd: ", ZSTD_getErrorName(got)));
      }
      if (static_cast<int64_t>(got) != bytes) {
        return absl::DataLossError(absl::StrCat(
            "the zstd frame held ", got, " bytes where ", bytes, " belong"));
      }
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("codec ", static_cast<int>(piece.codec()),
                       " is not one this build knows (a newer sender?)"));
  }
}

}  // namespace actorflow::internal::net
