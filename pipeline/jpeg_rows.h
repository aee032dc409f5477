#ifndef ACTORFLOW_PIPELINE_JPEG_ROWS_H_
#define ACTORFLOW_PIPELINE_JPEG_ROWS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/types/span.h"

namespace actorflow::internal::pipeline {

class JpegBitWriter;

// Where an MCU begins in a JPEG's entropy-coded data: the bit it starts
// at, and the DC predictors the MCUs before it leave (one per component, in
// the scan's order). Huffman data cannot be entered anywhere else: the
// MCUs before a window are otherwise decoded only to get to it.
struct JpegMcuStart {
  uint32_t byte = 0;  // offset in the file of the byte holding the first bit
  uint8_t bit = 0;    // bits of that byte the MCUs before used (0-7)
  int16_t pred[3] = {0, 0, 0};
};

// The MCUs of a baseline (or extended sequential) Huffman JPEG with one
// interleaved scan of every component (gray, or 3 components at any
// sampling), without restart markers: what photos and most datasets hold.
// Any other file (progressive, arithmetic, restart intervals, a scan per
// component, 12-bit) is not followed and is decoded whole as before.
//
// Scan finds where every kColumnStride-th MCU of every row begins. From
// those, a window's MCUs make a JPEG of their own (StartingAt: whole rows
// from one on; Columns: a block of rows and columns), which libjpeg
// decodes to the file's pixels there but at the edges it cut.
class JpegRows {
 public:
  // MCUs between two starts kept in a row. Each start is 12 bytes; a
  // window's MCUs begin and end at starts, so its Huffman decoding covers
  // about kColumnStride - 1 MCUs beyond its columns.
  static constexpr int kColumnStride = 4;

  // nullopt: not a file of the kind above, or a header it cannot follow.
  static std::optional<JpegRows> Parse(absl::Span<const uint8_t> encoded);

  int mcu_rows() const { return mcu_rows_; }
  int mcus_per_row() const { return mcus_per_row_; }
  // Image rows (columns) per MCU: 8 or 16.
  int mcu_height() const { return mcu_height_; }
  int mcu_width() const { return mcu_width_; }

  // Reads every Huffman code of the file and sets `starts` to where MCUs
  // 0, kColumnStride, 2 * kColumnStride, ... of each row begin, row after
  // row, and then where the data end (Start reads them). False if the data
  // do not decode to their end (a damaged file, or one libjpeg reads more
  // leniently), or the file is over 4 GiB: `starts` is then empty.
  bool Scan(absl::Span<const uint8_t> encoded,
            std::vector<JpegMcuStart>* starts) const;
  // Where MCU `mcu` of row `row` begins, for `mcu` a multiple of
  // kColumnStride or mcus_per_row() (the next row's start; for the last
  // row, the end of the data).
  const JpegMcuStart& Start(absl::Span<const JpegMcuStart> starts, int row,
                            int mcu) const;

  // A JPEG whose first MCU row is a stand-in (its pixels are not the
  // file's) and whose following rows are the file's rows `start_row`
  // onwards: decoded, its rows from mcu_height() on are the file's rows
  // from start_row * mcu_height() on, exactly, but for the first of them,
  // which chroma upsampling blends with the stand-in. The stand-in leaves
  // the DC predictors as the row needs and ends on the bit where the row
  // begins, so the rest of the data is copied as it is. False if the
  // Huffman tables lack the codes a stand-in needs, or `starts` does not
  // fit the file (the caller decodes the file whole).
  bool StartingAt(absl::Span<const uint8_t> encoded,
                  absl::Span<const JpegMcuStart> starts, int start_row,
                  std::vector<uint8_t>* out) const;

  // A JPEG of the file's MCUs `first_mcu` .. `end_mcu` - 1 (multiples of
  // kColumnStride, or mcus_per_row() for `end_mcu`) of rows `first_row` ..
  // `end_row` - 1, each row led by *stand_in_mcus stand-in MCUs (1, or up
  // to 8 where the tables need them; their pixels are not the file's) that
  // set the DC predictors and the bit alignment its MCUs need. Decoded,
  // its pixels from column *stand_in_mcus * mcu_width() on are the file's
  // from column first_mcu * mcu_width() on, exactly, but next to the edges
  // where the file goes on (chroma upsampling reads a neighbour: the
  // stand-in, or nothing): its first column, its first row if `first_row`
  // > 0, its last row or column where the file's rows or columns go on
  // beyond them. Where they end with the file's, it ends as the file does.
  // False as for StartingAt.
  bool Columns(absl::Span<const uint8_t> encoded,
               absl::Span<const JpegMcuStart> starts, int first_row,
               int end_row, int first_mcu, int end_mcu,
               std::vector<uint8_t>* out, int* stand_in_mcus) const;

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
  // Scan's reading; on false, `starts` holds what was found.
  bool ReadStarts(absl::Span<const uint8_t> encoded,
                  std::vector<JpegMcuStart>* starts) const;
  struct Codes;
  // The codes of the scan's tables, for stand-ins. False for a table no
  // encoder makes.
  bool BuildCodes(Codes* codes) const;
  // Writes `mcus` stand-in MCUs (their pixels are nobody's) that move the
  // DC predictors from `from` to `to` and leave the writer `to_bit` bits
  // into a byte. False if the tables lack the codes that needs.
  bool WriteStandIn(const Codes& codes, int mcus, const int16_t from[3],
                    const int16_t to[3], int to_bit,
                    JpegBitWriter* writer) const;

  JpegRows() = default;
  int starts_per_row() const {
    return (mcus_per_row_ + kColumnStride - 1) / kColumnStride;
  }
  bool Fits(absl::Span<const JpegMcuStart> starts) const {
    return starts.size() ==
           static_cast<size_t>(mcu_rows_) * starts_per_row() + 1;
  }
  // Columns with `stand_in_mcus` stand-ins a row; false if they cannot
  // be coded.
  bool WriteColumns(absl::Span<const uint8_t> encoded,
                    absl::Span<const JpegMcuStart> starts, const Codes& codes,
                    int first_row, int end_row, int first_mcu, int end_mcu,
                    int stand_in_mcus, std::vector<uint8_t>* out) const;
  // The header's kept segments, SOF's height and width set as given.
  void WriteHeader(absl::Span<const uint8_t> encoded, int height, int width,
                   std::vector<uint8_t>* out) const;

  std::vector<Component> components_;  // in scan order
  HuffmanTable dc_[4], ac_[4];
  int height_ = 0, width_ = 0;
  int mcus_per_row_ = 0, mcu_rows_ = 0, mcu_height_ = 8, mcu_width_ = 8;
  // The header's segments a decoder needs, as [begin, end) offsets (SOF's
  // size patched when copied), and where the entropy data begin.
  std::vector<std::pair<uint32_t, uint32_t>> kept_segments_;
  uint32_t height_offset_ = 0;  // of SOF's 16-bit height; its width follows
  uint32_t data_begin_ = 0;
};

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_JPEG_ROWS_H_
