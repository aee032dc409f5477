#include "pipeline/skipped_state.h"

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace actorflow::internal::pipeline {
namespace {

constexpr char kWhere[] = "pipeline.skipped.where";
constexpr char kLengths[] = "pipeline.skipped.lengths";
constexpr char kText[] = "pipeline.skipped.text";

}  // namespace

void SaveSkipped(const std::vector<SkippedSample>& samples,
                 KernelState* state) {
  std::vector<int64_t> where, lengths;
  std::string text;
  for (const SkippedSample& sample : samples) {
    where.insert(where.end(), {sample.epoch, sample.position});
    lengths.insert(lengths.end(), {static_cast<int64_t>(sample.name.size()),
                                   static_cast<int64_t>(sample.error.size())});
    absl::StrAppend(&text, sample.name, sample.error);
  }
  const int64_t n = static_cast<int64_t>(samples.size());
  state->AddValues<int64_t>(kWhere, where, {n, 2});
  state->AddValues<int64_t>(kLengths, lengths, {n, 2});
  state->AddValues<uint8_t>(
      kText, absl::MakeConstSpan(reinterpret_cast<const uint8_t*>(text.data()),
                                 text.size()));
}

absl::StatusOr<std::vector<SkippedSample>> LoadSkipped(
    const KernelState& state) {
  const StateEntry* where = state.Find(kWhere);
  const StateEntry* lengths = state.Find(kLengths);
  const StateEntry* text = state.Find(kText);
  if (where == nullptr || lengths == nullptr || text == nullptr ||
      where->data_type != DT_INT64 || lengths->data_type != DT_INT64 ||
      where->elem_cnt() != lengths->elem_cnt() || where->elem_cnt() % 2 != 0) {
    return absl::NotFoundError("the skipped samples are missing");
  }
  std::vector<int64_t> w(where->elem_cnt()), l(lengths->elem_cnt());
  std::memcpy(w.data(), where->bytes.data(), where->bytes.size());
  std::memcpy(l.data(), lengths->bytes.data(), lengths->bytes.size());
  std::vector<SkippedSample> skipped;
  size_t at = 0;
  for (size_t j = 0; j + 1 < w.size(); j += 2) {
    SkippedSample sample;
    sample.epoch = w[j];
    sample.position = w[j + 1];
    if (l[j] < 0 || l[j + 1] < 0 || at + l[j] + l[j + 1] > text->bytes.size()) {
      return absl::DataLossError("the skipped samples' text is short");
    }
    sample.name = text->bytes.substr(at, l[j]);
    at += l[j];
    sample.error = text->bytes.substr(at, l[j + 1]);
    at += l[j + 1];
    skipped.push_back(std::move(sample));
  }
  return skipped;
}

}  // namespace actorflow::internal::pipeline
