#include "nn/mlp_config.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "pipeline/dataset.h"
#include "thread/balanced_splitter.h"

namespace actorflow::internal::nn {

int Layers(const MlpConfig& c) { return static_cast<int>(c.hidden.size()) + 1; }
int64_t InUnits(const MlpConfig& c, int i) {
  return i == 0 ? c.inputs : c.hidden[i - 1];
}
int64_t OutUnits(const MlpConfig& c, int i) {
  return i + 1 == Layers(c) ? c.classes : c.hidden[i];
}
bool IsHidden(const MlpConfig& c, int i) { return i + 1 < Layers(c); }

uint64_t ParamSeed(const MlpConfig& c, int param) {
  return c.seed * static_cast<uint64_t>(2 * Layers(c)) +
         static_cast<uint64_t>(param);
}
double WeightScale(const MlpConfig& c, int i) {
  return std::sqrt(6.0 / static_cast<double>(InUnits(c, i)));
}

Window WindowOf(const MlpConfig& c, int i, int k) {
  const int64_t in = InUnits(c, i), out = OutUnits(c, i);
  Window w{0, 0, in, out, 0, out};
  const int n = c.streams;
  switch (SplitOf(c, i)) {
    case LayerSplit::kColumns:
      w.col0 = w.bias0 = SliceBegin(out, n, k);
      w.cols = w.bias_size = SliceBegin(out, n, k + 1) - w.col0;
      break;
    case LayerSplit::kRows:
      w.row0 = SliceBegin(in, n, k);
      w.rows = SliceBegin(in, n, k + 1) - w.row0;
      break;
    case LayerSplit::kReplicated:
      break;
  }
  return w;
}

int64_t SliceBegin(int64_t units, int streams, int k) {
  if (k >= streams) return units;
  return BalancedSplitter(units, streams).At(k).begin;
}

LayerSplit SplitOf(const MlpConfig& c, int i) {
  const int last = Layers(c) - 1;
  if (i < last) return i % 2 == 0 ? LayerSplit::kColumns : LayerSplit::kRows;
  // The output layer: rows after a column layer, else whole.
  return (last - 1) % 2 == 0 ? LayerSplit::kRows : LayerSplit::kReplicated;
}

absl::Status CheckConfig(const MlpConfig& c) {
  std::vector<std::string> problems;
  bool units_ok = c.inputs >= 1 && c.classes >= 2 && !c.hidden.empty();
  for (int64_t h : c.hidden) units_ok = units_ok && h >= 1;
  if (!units_ok) {
    problems.push_back(
        "inputs at least 1, at least one hidden layer of at least 1 unit, "
        "classes at least 2");
  }
  if (c.batch_size < 1) problems.push_back("batch_size: at least 1");
  if (c.streams < 1) {
    problems.push_back("streams: at least 1");
  } else if (units_ok) {
    for (int64_t h : c.hidden) {
      if (h < c.streams) {
        problems.push_back(absl::StrCat(
            "streams: at most the smallest hidden layer's units (",
            *std::min_element(c.hidden.begin(), c.hidden.end()), ")"));
        break;
      }
    }
  }
  if (!(c.lr > 0)) problems.push_back("lr: above 0");
  if (!(c.decay > 0 && c.decay <= 1) || c.decay_steps < 0) {
    problems.push_back("decay: in (0, 1], decay_steps: 0 or more");
  }
  if (!(c.momentum >= 0 && c.momentum < 1)) {
    problems.push_back("momentum: in [0, 1)");
  }
  if (c.depth < 1) problems.push_back("depth: at least 1");
  if (c.data && (c.data->epochs < 1 || c.data->std == 0)) {
    problems.push_back("data: epochs at least 1, std not 0");
  }
  if (problems.empty()) return absl::OkStatus();
  std::string text = "MLP config:";
  for (const std::string& p : problems) absl::StrAppend(&text, " ", p, ";");
  text.pop_back();
  return absl::InvalidArgumentError(text);
}

PieceResult MlpSchedule::Piece(int64_t p, int64_t batch_size) const {
  const int64_t q = p % period();
  PieceResult r;
  r.train = q < train_pieces;
  const int64_t index = r.train ? q : q - train_pieces;
  const int64_t samples = r.train ? train_samples : test_samples;
  r.rows = std::min(batch_size, samples - index * batch_size);
  return r;
}

absl::StatusOr<MlpSchedule> ScheduleOf(const MlpData& data,
                                       int64_t batch_size) {
  MlpSchedule s;
  auto count = [](const std::string& path,
                  int64_t limit) -> absl::StatusOr<int64_t> {
    auto dims = pipeline::ReadIdxHeader(path);
    if (!dims.ok()) return dims.status();
    if (dims->empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": an IDX file without dimensions"));
    }
    return limit > 0 ? std::min((*dims)[0], limit) : (*dims)[0];
  };
  auto train = count(data.train_images, data.train_limit);
  if (!train.ok()) return train.status();
  auto test = count(data.test_images, data.test_limit);
  if (!test.ok()) return test.status();
  s.train_samples = *train;
  s.test_samples = *test;
  s.train_pieces = (*train + batch_size - 1) / batch_size;
  s.test_pieces = (*test + batch_size - 1) / batch_size;
  if (s.period() == 0) {
    return absl::InvalidArgumentError("MLP data: both sets are empty");
  }
  return s;
}

}  // namespace actorflow::internal::nn
