#include "pipeline/concatenate.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::pipeline {

absl::StatusOr<int64_t> JoinAxis(int64_t axis, int64_t rank, bool stack) {
  const int64_t out_rank = stack ? rank + 1 : rank;
  if (out_rank == 0 || axis < -out_rank || axis >= out_rank) {
    return absl::InvalidArgumentError(absl::StrCat(
        "axis ", axis, " for samples of ", rank, " dimension(s): ",
        out_rank == 0
            ? "scalars have no axis to join along (stack them)"
            : absl::StrCat("in [", -out_rank, ", ", out_rank - 1, "]")));
  }
  return axis < 0 ? axis + out_rank : axis;
}

absl::Status Concatenate(absl::Span<const SampleRef> parts, int64_t axis,
                         bool stack, Sample* out) {
  if (parts.empty()) {
    return absl::InvalidArgumentError("nothing to join: no input");
  }
  const SampleRef& first = parts[0];
  const int64_t rank = static_cast<int64_t>(first.shape.size());
  auto at = JoinAxis(axis, rank, stack);
  if (!at.ok()) return at.status();
  SampleShape shape(first.shape.begin(), first.shape.end());
  if (stack) {
    shape.insert(shape.begin() + *at, static_cast<int64_t>(parts.size()));
  } else {
    shape[*at] = 0;
  }
  for (size_t k = 0; k < parts.size(); ++k) {
    const SampleRef& part = parts[k];
    if (part.type != first.type) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", k, " is ", DataTypeName(part.type), ", input 0 ",
          DataTypeName(first.type), ": join samples of one type (cast one)"));
    }
    if (static_cast<int64_t>(part.shape.size()) != rank) {
      return absl::InvalidArgumentError(absl::StrCat(
          "input ", k, " has shape ", ShapeString(part.shape), ", input 0 ",
          ShapeString(first.shape), ": join samples of one rank"));
    }
    for (int64_t d = 0; d < rank; ++d) {
      if (!stack && d == *at) continue;
      if (part.shape[d] != first.shape[d]) {
        return absl::InvalidArgumentError(absl::StrCat(
            "input ", k, " has shape ", ShapeString(part.shape), ", input 0 ",
            ShapeString(first.shape), ": axis ", d, " differs (",
            stack ? "stacked samples have one shape"
                  : absl::StrCat("only axis ", *at, " may differ"),
            ")"));
      }
    }
    if (!stack) shape[*at] += part.shape[*at];
  }
  out->Reshape(first.type, shape);
  // Each part is `outer` blocks of its own `inner` bytes (the elements from
  // the join axis on); the output interleaves them block by block.
  int64_t outer = 1;
  for (int64_t d = 0; d < *at; ++d) outer *= first.shape[d];
  const int64_t element = DataTypeSize(first.type);
  uint8_t* dst = out->storage.data();
  for (int64_t o = 0; o < outer; ++o) {
    for (const SampleRef& part : parts) {
      int64_t inner = element;
      for (int64_t d = *at; d < rank; ++d) inner *= part.shape[d];
      if (inner > 0) std::memcpy(dst, part.data + o * inner, inner);
      dst += inner;
    }
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
