#ifndef ACTORFLOW_PIPELINE_BATCH_SCHEDULE_H_
#define ACTORFLOW_PIPELINE_BATCH_SCHEDULE_H_

#include <algorithm>
#include <cstdint>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "actor/parallel_part.h"

namespace actorflow::pipeline {

// Which samples a batch source (idx_batches, image_batches) serves for
// each piece. An epoch is `period` pieces: piece p is batch
// q = p % period - offset of epoch p / period when 0 <= q < batches, else
// a piece of zero rows (so a training set and a test set interleave). Of
// batch q (its last one may be short), a task serves its part's rows.
class BatchSchedule {
 public:
  // `period` 0: the set's own batches. An error when the set's batches do
  // not fit in the period at `offset`.
  static absl::StatusOr<BatchSchedule> Make(int64_t samples, int64_t batch,
                                            int64_t period, int64_t offset,
                                            ParallelPart part) {
    if (part.num > 1 && part.axis != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel.attr['parallel_axis']: a batch source splits its rows "
          "(split(0)), not axis ",
          part.axis));
    }
    BatchSchedule s;
    s.samples_ = samples;
    s.batch_ = batch;
    s.batches_ = (samples + batch - 1) / batch;
    s.period_ = period > 0 ? period : s.batches_;
    s.offset_ = offset;
    s.part_ = part;
    if (offset + s.batches_ > s.period_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel.attr['period']: ", s.batches_, " batches at offset ", offset,
          " do not fit in a period of ", s.period_, " pieces"));
    }
    return s;
  }

  // Piece p's rows for this task: positions [first, first + count) of
  // epoch `epoch`'s order.
  struct Rows {
    int64_t epoch = 0, first = 0, count = 0;
  };
  Rows Of(int64_t piece) const {
    const int64_t q = piece % period_ - offset_;
    const bool mine = q >= 0 && q < batches_;
    const Range part =
        part_.Rows(mine ? std::min(batch_, samples_ - q * batch_) : 0);
    return Rows{piece / period_, q * batch_ + part.begin, part.size()};
  }
  // The most rows a piece gives this task.
  int64_t most_rows() const { return part_.Rows(batch_).size(); }

 private:
  int64_t samples_ = 0, batch_ = 1, batches_ = 0, period_ = 1, offset_ = 0;
  ParallelPart part_;
};

}  // namespace actorflow::pipeline

#endif  // ACTORFLOW_PIPELINE_BATCH_SCHEDULE_H_
