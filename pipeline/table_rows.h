#ifndef ACTORFLOW_PIPELINE_TABLE_ROWS_H_
#define ACTORFLOW_PIPELINE_TABLE_ROWS_H_

#include <memory>
#include <string>
#include <vector>

#include "pipeline/sample_ops.h"

// The sample operator `table_rows`: a sample's index (an integer sample of
// one element) in, that row of a table out, the table given whole in the
// attrs. What a reader of annotations hands on per image (the COCO reader's
// boxes, labels and image ids under the file reader's sharding and
// shuffling, whose label is the row). Attrs: `values` (float32 out) or
// `int_values` (int32 out), one of them; `offsets`, one more than the rows,
// rising from 0 to the values' count: row i is values [offsets[i],
// offsets[i+1]); `row_width` w: the row as [n / w, w], or 0 (the default)
// as [n].
namespace actorflow::internal::pipeline {

std::unique_ptr<SampleOp> MakeTableRowsOp();
std::vector<std::string> TableRowsAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_TABLE_ROWS_H_
