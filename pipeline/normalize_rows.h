#ifndef ACTORFLOW_PIPELINE_NORMALIZE_ROWS_H_
#define ACTORFLOW_PIPELINE_NORMALIZE_ROWS_H_

#include <cstdint>

namespace actorflow::internal::pipeline {

// crop_mirror_normalize's inner loop for RGB bytes, sixteen pixels at a
// time where the CPU has SSSE3 (eight floats a store with AVX2): output
// pixel x of each channel k is (row[3 * x' + k] - mean[k]) * inv[k], x' = x
// (or width - 1 - x when mirrored), written to planes[k][x]. The arithmetic
// is a float subtract and a float multiply per value, exactly as the scalar
// loop's, so the values are the same bit for bit. Returns how many of the
// first pixels it wrote (a multiple of 16; 0 without SSSE3): the caller
// writes the rest. `stream`: where the planes are aligned to the vector (32
// or 16 bytes), with stores that bypass the cache (for output that nothing
// reads soon: a batch's rows, where a cached store would first read each
// line in); EndStreaming() then orders them before anything that hands the
// output on.
int64_t NormalizeRgbRow(const uint8_t* row, int64_t width, bool mirror,
                        const float* mean, const float* inv,
                        float* const planes[3], bool stream = false);
void EndStreaming();

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_NORMALIZE_ROWS_H_
