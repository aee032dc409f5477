#ifndef ACTORFLOW_PIPELINE_IMAGE_CODEC_H_
#define ACTORFLOW_PIPELINE_IMAGE_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pipeline/sample.h"

namespace actorflow::internal::pipeline {

// The largest image `decode` accepts by default: 64 Mi pixels (8192 x
// 8192, 192 MiB as RGB). A header that claims more is refused before
// anything is allocated.
constexpr int64_t kDefaultMaxPixels = int64_t{64} << 20;

// What an image's header says, read without decoding.
struct ImageHeader {
  std::string format;  // "jpeg" or "png"
  int64_t height = 0;  // as stored
  int64_t width = 0;
  // A JPEG's EXIF orientation (pipeline/orientation.h), read when asked;
  // else, and for PNG, 1.
  int orientation = 1;
  // The size shown upright: height and width swapped for orientations 5-8.
  int64_t upright_height() const { return orientation >= 5 ? width : height; }
  int64_t upright_width() const { return orientation >= 5 ? height : width; }
};
absl::StatusOr<ImageHeader> ReadImageHeader(absl::Span<const uint8_t> encoded,
                                            bool read_orientation = false);

struct DecodeOptions {
  int channels = 3;  // 3 (RGB) or 1 (gray), whatever the file stores
  // Refuse a header that claims more pixels (0: no limit).
  int64_t max_pixels = kDefaultMaxPixels;
  // JPEG only: decode at scale_eighths / 8 of the size (1..8), in the DCT
  // domain (libjpeg-turbo's scaling: far cheaper than decoding whole and
  // resizing). The result is ceil(size * scale_eighths / 8). PNG ignores it.
  int scale_eighths = 8;
  // JPEG only: decode only rows [y, y + h) and columns [x, x + w) of the
  // (scaled) image, h or w 0 meaning all. libjpeg-turbo skips the rest:
  // rows outside are entropy-decoded but not inverse-transformed (so damage
  // anywhere fails the decode, whatever the window), columns outside not
  // transformed either; once a file has decoded clean, later windows of it
  // read only their own MCUs (CleanJpegs, JpegRows). The output holds a
  // margin around the window (a chroma sample's pixels, the columns widened
  // to whole blocks on the left), which keeps the window's pixels exactly
  // the whole image's: DecodedRegion says where it lies.
  int64_t y = 0, x = 0, h = 0, w = 0;
  // JPEG only: the image turned upright as its EXIF orientation says
  // (DALI's decoders do; PIL's open does not). The window above is then
  // the upright image's, and so is DecodedRegion.
  bool adjust_orientation = false;
};

// Where a decoded image lies in the whole (scaled) image.
struct DecodedRegion {
  int64_t full_height = 0, full_width = 0;  // of the whole scaled image
  int64_t y = 0, x = 0;  // the output's first row and column in it
};

// JPEG (libjpeg-turbo) and PNG (libpng) to uint8 HWC with `channels` 3
// (RGB) or 1 (gray), whatever the file stores. The format is told by the
// first bytes, not the file name. A corrupt or truncated file is an error
// (libjpeg's warnings, such as a premature end of data, count as errors,
// and the decoder stops at the first: a damaged file costs no more than
// its good part), as is a header claiming more than max_pixels, a JPEG of
// more than 1000 scans, or one that would need more than its image's worth
// of decoder memory.
absl::Status DecodeImage(absl::Span<const uint8_t> encoded, int channels,
                         Sample* out);
absl::Status DecodeImage(absl::Span<const uint8_t> encoded,
                         const DecodeOptions& options, Sample* out,
                         DecodedRegion* region = nullptr);

// The smallest DCT scale (in eighths) among 1, 2, 4 and 8 (those
// libjpeg-turbo transforms with vector code) at which an image of height x
// width still covers target_height x target_width: decoding there and
// resizing down to the target keeps what a resize from the whole image
// keeps, within the DCT scaling's rounding.
int DctScaleFor(int64_t height, int64_t width, int64_t target_height,
                int64_t target_width);
// libjpeg's size at that scale: ceil(size * eighths / 8).
inline int64_t ScaledSize(int64_t size, int eighths) {
  return (size * eighths + 7) / 8;
}

// "jpeg", "png" or "" from the first bytes.
std::string SniffImageFormat(absl::Span<const uint8_t> encoded);

// uint8 HWC (1 or 3 channels) to a file's bytes; for fixtures and tools.
absl::StatusOr<std::string> EncodeJpeg(const SampleRef& image, int quality);
absl::StatusOr<std::string> EncodePng(const SampleRef& image);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_IMAGE_CODEC_H_
