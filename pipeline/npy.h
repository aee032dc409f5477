#ifndef ACTORFLOW_PIPELINE_NPY_H_
#define ACTORFLOW_PIPELINE_NPY_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pipeline/sample.h"
#include "pipeline/sample_ops.h"

// NumPy's .npy files (format versions 1 to 3) as samples, for DALI's
// fn.readers.numpy: the file reader's bytes, then `npy_decode`.
namespace actorflow::internal::pipeline {

struct NpyHeader {
  DataType type = DT_UINT8;
  std::vector<int64_t> shape;  // () is a scalar: one value
  bool fortran_order = false;
  int64_t data_offset = 0;  // where the values begin
};

// The header: magic, version, and the dict with 'descr' (little-endian or
// single-byte bool, uint8, int8, int32, int64, float32 or float64),
// 'fortran_order' and 'shape'. Errors name what is wrong.
absl::StatusOr<NpyHeader> ReadNpyHeader(absl::Span<const uint8_t> file);

// The array in C order (a Fortran-order file is transposed), of its own
// shape and type; an error when the file holds fewer bytes than that.
absl::Status DecodeNpy(absl::Span<const uint8_t> file, Sample* out);

// The sample operator `npy_decode`: bytes -> the array. attrs `dtype` (s,
// the files' type: every file must have it) and `max_shape` (i-list: the
// largest extent along each axis, so also the rank), both from the files'
// headers when the pipeline is defined; a file that differs is an error
// naming both (skippable, as a damaged file).
std::unique_ptr<SampleOp> MakeNpyDecodeOp();
std::vector<std::string> NpyDecodeAttrs();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_NPY_H_
