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
  std::vector<char> scratch;  // compressBound of the largest blob so far
  ~Zstd() { ZSTD_freeCCtx(context); }
};

BlobPacker::BlobPacker(bool compress)
    : zstd_(compress ? std::make_unique<Zstd>() : nullptr) {}

BlobPacker::~BlobPacker() = default;

void BlobPacker::Pack(const void* data, int64_t bytes, BlobPiece* piece) {
  packed_bytes_ += bytes;
  if (zstd_ != nullptr && zstd_->context != nullptr && bytes > 0) {
    const size_t bound = ZSTD_compressBound(static_cast<size_t>(bytes));
    if (zstd_->scratch.size() < bound) zstd_->scratch.resize(bound);
    const size_t got =
        ZSTD_compressCCtx(zstd_->context, zstd_->scratch.data(), bound, data,
                          static_cast<size_t>(bytes), kLevel);
    if (!ZSTD_isError(got) && static_cast<int64_t>(got) < bytes) {
      piece->set_codec(BlobPiece::ZSTD);
      piece->mutable_data()->assign(zstd_->scratch.data(), got);
      wire_bytes_ += static_cast<int64_t>(got);
      return;
    }
  }
  piece->set_codec(BlobPiece::RAW);
  piece->mutable_data()->assign(static_cast<const char*>(data), bytes);
  wire_bytes_ += bytes;
}

struct BlobUnpacker::Zstd {
  ZSTD_DCtx* context = ZSTD_createDCtx();
  ~Zstd() { ZSTD_freeDCtx(context); }
};

BlobUnpacker::BlobUnpacker() = default;
BlobUnpacker::~BlobUnpacker() = default;

absl::Status BlobUnpacker::Unpack(const BlobPiece& piece, void* out,
                                  int64_t bytes) {
  const std::string& data = piece.data();
  switch (piece.codec()) {
    case BlobPiece::RAW:
      if (static_cast<int64_t>(data.size()) != bytes) {
        return absl::DataLossError(
            absl::StrCat(data.size(), " bytes where ", bytes, " belong"));
      }
      if (bytes > 0) std::memcpy(out, data.data(), bytes);
      return absl::OkStatus();
    case BlobPiece::ZSTD: {
      const unsigned long long size =  // NOLINT(runtime/int): zstd's type
          ZSTD_getFrameContentSize(data.data(), data.size());
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
      const size_t got =
          ZSTD_decompressDCtx(zstd_->context, out, static_cast<size_t>(bytes),
                              data.data(), data.size());
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
