// net::BlobPacker and BlobUnpacker: a register's blob into a BlobPiece and
// back, compressed with zstd where that makes it smaller, and every kind of
// damaged piece refused with a message that says what was found.
#include "net/blob_codec.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/match.h"

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

TEST_CASE("BlobPacker compresses what shrinks and unpacks it exactly",
          "[net]") {
  const std::vector<float> values = Repeating(4096);
  const int64_t bytes = values.size() * sizeof(float);
  BlobPacker packer(/*compress=*/true);
  BlobPiece piece;
  packer.Pack(values.data(), bytes, &piece);
  CHECK(piece.codec() == BlobPiece::ZSTD);
  CHECK(static_cast<int64_t>(piece.data().size()) < bytes / 10);
  CHECK(packer.packed_bytes() == bytes);
  CHECK(packer.wire_bytes() == static_cast<int64_t>(piece.data().size()));
  std::vector<float> back(values.size(), -1.0f);
  BlobUnpacker unpacker;
  REQUIRE(unpacker.Unpack(piece, back.data(), bytes).ok());
  CHECK(back == values);
}

TEST_CASE("BlobPacker sends what does not shrink as it is", "[net]") {
  const uint64_t seed = std::random_device{}();
  INFO("seed " << seed);
  const std::vector<uint8_t> noise = Noise(65536, seed);
  BlobPacker packer(/*compress=*/true);
  BlobPiece piece;
  packer.Pack(noise.data(), noise.size(), &piece);
  CHECK(piece.codec() == BlobPiece::RAW);
  CHECK(piece.data().size() == noise.size());
  CHECK(packer.wire_bytes() == packer.packed_bytes());
  std::vector<uint8_t> back(noise.size());
  BlobUnpacker unpacker;
  REQUIRE(unpacker.Unpack(piece, back.data(), back.size()).ok());
  CHECK(back == noise);

  // Without compression asked for, nothing is compressed; an empty blob
  // is fine either way.
  BlobPacker plain(/*compress=*/false);
  const std::vector<float> values = Repeating(1024);
  plain.Pack(values.data(), values.size() * sizeof(float), &piece);
  CHECK(piece.codec() == BlobPiece::RAW);
  packer.Pack(nullptr, 0, &piece);
  CHECK(piece.data().empty());
  REQUIRE(unpacker.Unpack(piece, nullptr, 0).ok());
}

TEST_CASE("BlobUnpacker refuses damaged pieces, saying what it found",
          "[net]") {
  const std::vector<float> values = Repeating(4096);
  const int64_t bytes = values.size() * sizeof(float);
  BlobPacker packer(/*compress=*/true);
  BlobPiece good;
  packer.Pack(values.data(), bytes, &good);
  REQUIRE(good.codec() == BlobPiece::ZSTD);
  std::vector<float> out(values.size());
  BlobUnpacker unpacker;

  // A frame for another size than the register's blob.
  absl::Status status = unpacker.Unpack(good, out.data(), bytes - 4);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(status.message(),
                          "a zstd frame of 16384 bytes "
                          "where 16380 belong"));

  // Not a frame at all.
  BlobPiece garbage = good;
  garbage.set_data("not zstd");
  status = unpacker.Unpack(garbage, out.data(), bytes);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(status.message(), "not a zstd frame"));

  // A frame cut short.
  BlobPiece truncated = good;
  truncated.mutable_data()->resize(good.data().size() - 3);
  status = unpacker.Unpack(truncated, out.data(), bytes);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(status.message(), "zstd: "));

  // A raw piece of another size.
  BlobPiece raw;
  raw.set_data(std::string(100, 'x'));
  status = unpacker.Unpack(raw, out.data(), bytes);
  CHECK(status.code() == absl::StatusCode::kDataLoss);
  CHECK(absl::StrContains(status.message(), "100 bytes where 16384 belong"));

  // A codec from a newer sender.
  BlobPiece unknown = good;
  unknown.set_codec(static_cast<BlobPiece::Codec>(7));
  status = unpacker.Unpack(unknown, out.data(), bytes);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(status.message(), "codec 7"));

  // And the good piece still unpacks after all that.
  REQUIRE(unpacker.Unpack(good, out.data(), bytes).ok());
  CHECK(out == values);
}

}  // namespace
}  // namespace actorflow::internal::net
