#include "net/piece_codec.h"

#include <google/protobuf/io/coded_stream.h>
#include <grpc/slice.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::net {

void WireBytes::CopyTo(void* out) const {
  char* to = static_cast<char*>(out);
  int64_t skip = offset_, left = size_;
  for (const grpc::Slice& slice : *slices_) {
    if (left == 0) break;
    const int64_t n = static_cast<int64_t>(slice.size());
    if (skip >= n) {
      skip -= n;
      continue;
    }
    const int64_t take = std::min(n - skip, left);
    std::memcpy(to, slice.begin() + skip, take);
    to += take;
    left -= take;
    skip = 0;
  }
}

const char* WireBytes::Contiguous(std::string* scratch) const {
  int64_t skip = offset_;
  for (const grpc::Slice& slice : *slices_) {
    const int64_t n = static_cast<int64_t>(slice.size());
    if (skip >= n) {
      skip -= n;
      continue;
    }
    if (size_ <= n - skip) {
      return reinterpret_cast<const char*>(slice.begin()) + skip;
    }
    break;
  }
  scratch->resize(size_);
  CopyTo(scratch->data());
  return scratch->data();
}

grpc::Slice NewSlice(int64_t bytes, uint8_t** data) {
  // Never inlined (a small slice's bytes live in the slice itself, so they
  // would move with every copy of it): `data` stays valid.
  grpc_slice slice = grpc_slice_malloc_large(static_cast<size_t>(bytes));
  *data = GRPC_SLICE_START_PTR(slice);
  return grpc::Slice(slice, grpc::Slice::STEAL_REF);
}

grpc::ByteBuffer EncodePiece(const RegisterPiece& header,
                             std::vector<grpc::Slice>* data) {
  using google::protobuf::io::CodedOutputStream;
  const size_t n = header.ByteSizeLong();
  const size_t prefix =
      CodedOutputStream::VarintSize32(static_cast<uint32_t>(n));
  std::vector<grpc::Slice> slices;
  slices.reserve(data->size() + 1);
  uint8_t* at = nullptr;
  slices.push_back(NewSlice(static_cast<int64_t>(prefix + n), &at));
  at = CodedOutputStream::WriteVarint32ToArray(static_cast<uint32_t>(n), at);
  header.SerializeWithCachedSizesToArray(at);
  for (grpc::Slice& slice : *data) {
    if (slice.size() > 0) slices.push_back(std::move(slice));
  }
  data->clear();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::Status DecodedPiece::Decode(const grpc::ByteBuffer& message) {
  slices_.clear();
  offsets_.clear();
  header_.Clear();
  grpc::Status dumped = message.Dump(&slices_);
  if (!dumped.ok()) {
    return absl::DataLossError(
        absl::StrCat("a piece's bytes: ", dumped.error_message()));
  }
  const int64_t total = static_cast<int64_t>(message.Length());
  // The header's length, then the header: in place where the first slice
  // holds them (the usual case), else gathered into scratch_.
  using google::protobuf::io::CodedInputStream;
  const int64_t prefix_room = std::min<int64_t>(total, 5);
  const char* prefix =
      WireBytes(&slices_, 0, prefix_room).Contiguous(&scratch_);
  CodedInputStream varint(reinterpret_cast<const uint8_t*>(prefix),
                          static_cast<int>(prefix_room));
  uint32_t n = 0;
  if (!varint.ReadVarint32(&n)) {
    return absl::DataLossError(
        absl::StrCat("a message of ", total, " bytes without a piece header"));
  }
  int64_t at = varint.CurrentPosition();
  if (n > total - at) {
    return absl::DataLossError(absl::StrCat("a piece header of ", n,
                                            " bytes in a message of ", total));
  }
  const char* header = WireBytes(&slices_, at, n).Contiguous(&scratch_);
  if (!header_.ParseFromArray(header, static_cast<int>(n))) {
    return absl::DataLossError(absl::StrCat("a piece header of ", n,
                                            " bytes that does not parse (",
                                            total, " bytes in the message)"));
  }
  at += n;
  offsets_.reserve(header_.blob_size());
  for (int b = 0; b < header_.blob_size(); ++b) {
    const int64_t bytes = header_.blob(b).wire_bytes();
    if (bytes < 0 || bytes > total - at) {
      return absl::DataLossError(absl::StrCat("blob ", b, " claims ", bytes,
                                              " bytes where ", total - at,
                                              " are left in the message"));
    }
    offsets_.push_back(at);
    at += bytes;
  }
  if (at != total) {
    return absl::DataLossError(
        absl::StrCat(total - at, " bytes follow the last blob of the piece"));
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::net
