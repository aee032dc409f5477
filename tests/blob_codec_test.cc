// net::BlobPacker and BlobUnpacker: a register's blob into its piece's
// message and back, compressed with zstd where that makes it smaller; and
// net/piece_codec.h's framing, read back from a message whatever slices
// gRPC cut it into. Every kind of damaged piece is refused with a message
// that says what was found.
#include "net/blob_codec.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "net/piece_codec.h"

namespace actorflow::internal::net {
namespace {

std::vector<float> Repeating(int64_t n) {
  std::vector<float> values(n);
  for (int64_t i = 0; i < n; ++i) values[i] = static_cast<float>(i % 7);
  return values;
}

std::vector<uint8_t> Noise(int64_t n, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  return bytes;
}

std::string Flat(const grpc::ByteBuffer& message) {
  std::vector<grpc::Slice> slices;
  REQUIRE(message.Dump(&slices).ok());
  std::string bytes;
  for (const grpc::Slice& slice : slices) {
    bytes.append(reinterpret_cast<const char*>(slice.begin()), slice.size());
  }
  return bytes;
}

// `bytes` as a message in slices of `chunk` bytes (the last shorter), as a
// receiver may get it.
grpc::ByteBuffer Sliced(const std::string& bytes, size_t chunk) {
  std::vector<grpc::Slice> slices;
  for (size_t at = 0; at < bytes.size(); at += chunk) {
    slices.emplace_back(bytes.data() + at, std::min(chunk, bytes.size() - at));
  }
  return grpc::ByteBuffer(slices.data(), slices.size());
}

// One blob packed and framed alone, then decoded from slices of `chunk`.
struct OneBlob {
  RegisterPiece header;
  DecodedPiece decoded;

  OneBlob(BlobPacker* packer, const void* data, int64_t bytes,
          size_t chunk = 1 << 20) {
    std::vector<grpc::Slice> slices;
    slices.push_back(packer->Pack(data, bytes, header.add_blob()));
    grpc::ByteBuffer message = EncodePiece(header, &slices);
    REQUIRE(decoded.Decode(Sliced(Flat(message), chunk)).ok());
  }
  const BlobPiece& piece() const { return decoded.header().blob(0); }
  WireBytes wire() const { return decoded.blob_bytes(0); }
};

TEST_CASE("BlobPacker compresses what shrinks and unpacks it exactly",
          "[net]") {
  const std::vector<float> values = Repeating(4096);
  const int64_t bytes = values.size() * sizeof(float);
  BlobPacker packer(/*compress=*/true);
  // The frame in one slice, and cut into slices of 7 bytes.
  for (size_t chunk : {size_t{1} << 20, size_t{7}}) {
    INFO("slices of " << chunk << " bytes");
    OneBlob one(&packer, values.data(), bytes, chunk);
    CHECK(one.piece().codec() == BlobPiece::ZSTD);
    CHECK(one.wire().size() < bytes / 10);
    CHECK(one.piece().wire_bytes() == one.wire().size());
    std::vector<float> back(values.size(), -1.0f);
    BlobUnpacker unpacker;
    REQUIRE(unpacker.Unpack(one.piece(), one.wire(), back.data(), bytes).ok());
    CHECK(back == values);
  }
  CHECK(packer.packed_bytes() == 2 * bytes);
  CHECK(packer.wire_bytes() < 2 * bytes / 10);
}

TEST_CASE("BlobPacker sends what does not shrink as it is", "[net]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  const std::vector<uint8_t> noise = Noise(65536, seed);
  BlobPacker packer(/*compress=*/true);
  OneBlob one(&packer, noise.data(), noise.size(), /*chunk=*/4093);
  CHECK(one.piece().codec() == BlobPiece::RAW);
  CHECK(one.wire().size() == std::ssize(noise));
  CHECK(packer.wire_bytes() == packer.packed_bytes());
  std::vector<uint8_t> back(noise.size());
  BlobUnpacker unpacker;
  REQUIRE(
      unpacker.Unpack(one.piece(), one.wire(), back.data(), back.size()).ok());
  CHECK(back == noise);

  // Without compression asked for, nothing is compressed; an empty blob
  // is fine either way.
  BlobPacker plain(/*compress=*/false);
  const std::vector<float> values = Repeating(1024);
  OneBlob raw(&plain, values.data(), values.size() * sizeof(float));
  CHECK(raw.piece().codec() == BlobPiece::RAW);
  OneBlob empty(&packer, nullptr, 0);
  CHECK(empty.wire().size() == 0);
  REQUIRE(unpacker.Unpack(empty.piece(), empty.wire(), nullptr, 0).ok());
}

TEST_CASE("BlobUnpacker refuses damaged pieces, saying what it found",
          "[net]") {
  const std::vector<float> values = Repeating(4096);
  const int64_t bytes = values.size() * sizeof(float);
  BlobPacker packer(/*compress=*/true);
  OneBlob good(&packer, values.data(), bytes);
  REQUIRE(good.piece().codec() == BlobPiece::ZSTD);
  std::vector<float> out(values.size());
  BlobUnpacker unpacker;

  // A frame for another size than the register's blob.
  absl::Status status =
      unpacker.Unpack(good.piece(), good.wire(), out.data(), bytes - 4);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(status.message(),
                          "a zstd frame of 16384 bytes "
                          "where 16380 belong"));

  // Not a frame at all.
  const std::string text = "not zstd";
  const std::vector<grpc::Slice> garbage = {grpc::Slice(text)};
  const WireBytes garbage_bytes(&garbage, 0, std::ssize(text));
  status = unpacker.Unpack(good.piece(), garbage_bytes, out.data(), bytes);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(status.message(), "not a zstd frame"));

  // A frame cut short.
  std::string frame(good.wire().size(), '\0');
  good.wire().CopyTo(frame.data());
  const std::vector<grpc::Slice> cut = {grpc::Slice(frame)};
  status =
      unpacker.Unpack(good.piece(), WireBytes(&cut, 0, std::ssize(frame) - 3),
                      out.data(), bytes);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(status.message(), "zstd: "));

  // A raw piece of another size.
  BlobPiece raw;
  const std::vector<grpc::Slice> hundred = {grpc::Slice(std::string(100, 'x'))};
  status = unpacker.Unpack(raw, WireBytes(&hundred, 0, 100), out.data(), bytes);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(status.message(), "100 bytes where 16384 belong"));

  // A codec from a newer sender.
  BlobPiece unknown = good.piece();
  unknown.set_codec(static_cast<BlobPiece::Codec>(7));
  status = unpacker.Unpack(unknown, good.wire(), out.data(), bytes);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(status.message(), "codec 7"));

  // And the good piece still unpacks after all that.
  REQUIRE(unpacker.Unpack(good.piece(), good.wire(), out.data(), bytes).ok());
  CHECK(out == values);
}

TEST_CASE("A piece's blobs come back from any slicing of its message",
          "[net]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  std::mt19937_64 random(seed);
  // Blobs of 0 to 5000 bytes, some compressible; the header as Send makes.
  RegisterPiece header;
  header.set_regst_desc_id(12);
  header.set_piece_id(34);
  header.set_src_rank(1);
  BlobPacker packer(/*compress=*/true);
  std::vector<std::vector<uint8_t>> blobs;
  std::vector<grpc::Slice> slices;
  for (int b = 0; b < 5; ++b) {
    const int64_t n = b == 2 ? 0 : static_cast<int64_t>(random() % 5001);
    blobs.push_back(b % 2 ? std::vector<uint8_t>(n, static_cast<uint8_t>(b))
                          : Noise(n, random()));
    BlobPiece* piece = header.add_blob();
    piece->add_shape(n);
    slices.push_back(packer.Pack(blobs.back().data(), n, piece));
  }
  const std::string flat = Flat(EncodePiece(header, &slices));
  CHECK(slices.empty());
  for (size_t chunk :
       {size_t{1}, size_t{3}, size_t{64}, size_t{4096}, flat.size()}) {
    INFO("slices of " << chunk << " bytes");
    DecodedPiece decoded;
    REQUIRE(decoded.Decode(Sliced(flat, chunk)).ok());
    CHECK(decoded.header().piece_id() == 34);
    CHECK(decoded.header().src_rank() == 1);
    REQUIRE(decoded.header().blob_size() == 5);
    BlobUnpacker unpacker;
    for (int b = 0; b < 5; ++b) {
      std::vector<uint8_t> back(blobs[b].size());
      REQUIRE(unpacker
                  .Unpack(decoded.header().blob(b), decoded.blob_bytes(b),
                          back.data(), std::ssize(back))
                  .ok());
      CHECK(back == blobs[b]);
    }
  }
}

TEST_CASE("DecodedPiece refuses what is not a piece, saying what it found",
          "[net]") {
  RegisterPiece header;
  header.set_piece_id(5);
  header.add_blob()->set_wire_bytes(10);
  std::vector<grpc::Slice> ten = {grpc::Slice(std::string(10, 'y'))};
  const std::string good = Flat(EncodePiece(header, &ten));
  DecodedPiece decoded;
  REQUIRE(decoded.Decode(Sliced(good, 5)).ok());

  auto refused = [&](const std::string& bytes, const std::string& says) {
    INFO(says);
    const absl::Status status = decoded.Decode(Sliced(bytes, 5));
    CHECK(status.code() == absl::StatusCode::kDataLoss);
    CHECK(absl::StrContains(status.message(), says));
  };
  refused(good.substr(0, good.size() - 1),
          "blob 0 claims 10 bytes where 9 are left");
  refused(good + "zz", "2 bytes follow the last blob");
  refused(good.substr(0, 3), "a piece header of");
  refused("\xff", "without a piece header");
  // The header's length says more than the message holds.
  refused(std::string("\x7f") + good.substr(1),
          "a piece header of 127 bytes in a message of");
  // A header that protobuf refuses: field 3 (blob) cut short.
  refused(std::string("\x02\x1a\x05", 3) + std::string(10, 'y'),
          "does not parse");
  const absl::Status empty = decoded.Decode(grpc::ByteBuffer());
  CHECK(empty.code() == absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace actorflow::internal::net
