#ifndef ACTORFLOW_PIPELINE_JPEG_ROWS_H_
#define ACTORFLOW_PIPELINE_JPEG_ROWS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace actorflow::internal::pipeline {

// Where an MCU row of a JPEG's entropy-coded data begins: the bit it starts
// at, and the DC predictors the row above leaves (one per component, in
// the scan's order). Huffman data cannot be entered anywhere else: a
// window's rows above it are otherwise decoded only to get here.
struct JpegRowStart {
  uint32_t byte = 0;  // offset in the file of the byte holding the first bit
  uint8_t bit = 0;    // bits of that byte the row above used (0-7)
  int16_t pred[3] = {0, 0, 0};
};

// The MCU rows of a baseline (or extended sequential) Huffman JPEG with one
// interleaved scan of every component (gray, or 3 components at any
// sampling), without restart markers: what photos and most datasets hold.
// Any other file (progressive, arithmetic, restart intervals, a scan per
// component, 12-bit) is not Supported and is decoded whole as before.
class JpegRows {
 public:
  // nullopt: not a file of the kind above, or a header it cannot follow.
  static std::optional<JpegRows> Parse(absl::Span<const uint8_t> encoded);

  int mcu_rows() const { return mcu_rows_; }
  // Image rows per MCU row (8 or 16).
  int mcu_height() const { return mcu_height_; }

  // Appends to `starts` (which holds the starts of rows 0 .. k, k >= 0, as
  // earlier calls left them, or nothing) those of rows k + 1 .. `row`,
  // reading the Huffman codes from the last start known. False if the data
  // do not decode that far (a damaged file: the caller decodes it whole,
  // and libjpeg says what is wrong); `starts` then holds what was found.
  bool Scan(absl::Span<const uint8_t> encoded, int row,
            std::vector<JpegRowStart>* starts) const;

  // A JPEG whose first MCU row is a stand-in (its pixels are not the
  // file's) and whose following rows are the file's rows `start` onwards:
  // decoded, its rows from mcu_height() on are the file's rows from
  // start_row * mcu_height() on, exactly, but for the first of them, which
  // chroma upsampling blends with the stand-in. The stand-in leaves the DC
  // predictors as `start` says and ends on the bit where the row begins, so
  // the rest of the data is copied as it is. False if the Huffman tables
  // lack the codes a stand-in needs (the caller decodes the file whole).
  bool StartingAt(absl::Span<const uint8_t> encoded, int start_row,
                  const JpegRowStart& start, std::vector<uint8_t>* out) const;

 private:
  struct Component {
    int h = 1, v = 1;
    int dc_table = 0, ac_table = 0;
  };
  // A DHT table as stored: codes per length 1-16, then the symbols.
  struct HuffmanTable {
    bool defined = false;
    uint8_t counts[17] = {0};
    std::vector<uint8_t> symbols;
  };

  JpegRows() = default;

  std::vector<Component> components_;  // in scan order
  HuffmanTable dc_[4], ac_[4];
  int height_ = 0, width_ = 0;
  int mcus_per_row_ = 0, mcu_rows_ = 0, mcu_height_ = 8;
  // The header's segments a decoder needs, as [begin, end) offsets (SOF's
  // height patched when copied), and where the entropy data begin.
  std::vector<std::pair<uint32_t, uint32_t>> kept_segments_;
  uint32_t height_offset_ = 0;  // of SOF's 16-bit height
  uint32_t data_begin_ = 0;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_JPEG_ROWS_H_
