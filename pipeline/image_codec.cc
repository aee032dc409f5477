#include "pipeline/image_codec.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <png.h>

#include "absl/strings/str_cat.h"
#include "pipeline/clean_jpegs.h"
#include "pipeline/jpeg_rows.h"
#include "pipeline/orientation.h"

namespace actorflow::internal::pipeline {
namespace {

// libjpeg reports errors through a callback that must not return: it
// longjmps back to the decode call. A warning (corrupt data that libjpeg
// would paper over) is an error too, and stops the decoder at once.
struct JpegError {
  jpeg_error_mgr mgr;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX] = {0};
  bool warned = false;
};

void JpegErrorExit(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void JpegEmitMessage(j_common_ptr cinfo, int level) {
  if (level >= 0) return;  // trace messages
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  err->warned = true;
  std::longjmp(err->jump, 1);
}

// Routes a decoder's errors and warnings to `err` (its caller setjmps
// err->jump before any libjpeg call that may fail).
void CatchJpegErrors(jpeg_decompress_struct* cinfo, JpegError* err) {
  cinfo->err = jpeg_std_error(&err->mgr);
  err->mgr.error_exit = JpegErrorExit;
  err->mgr.emit_message = JpegEmitMessage;
}

// A progressive JPEG may hold any number of scans, each a pass over the
// whole coefficient buffer: a few kilobytes of them can cost minutes.
constexpr int kMaxJpegScans = 1000;

void JpegProgress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number <= kMaxJpegScans) return;
  auto* err = reinterpret_cast<JpegError*>(cinfo->err);
  std::snprintf(err->message, sizeof(err->message),
                "more than %d scans (a damaged or hostile progressive file)",
                kMaxJpegScans);
  std::longjmp(err->jump, 1);
}

absl::Status TooLarge(const char* format, int64_t height, int64_t width,
                      int64_t max_pixels) {
  return absl::ResourceExhaustedError(
      absl::StrCat(format, ": the header claims ", width, " x ", height, " = ",
                   width * height, " pixels, above max_pixels ", max_pixels,
                   " (nothing was decoded)"));
}

// The EXIF orientation among the markers jpeg_save_markers kept (1: none).
int SavedOrientation(j_decompress_ptr cinfo) {
  for (jpeg_saved_marker_ptr marker = cinfo->marker_list; marker != nullptr;
       marker = marker->next) {
    if (marker->marker == JPEG_APP0 + 1 && marker->data_length >= 6 &&
        std::memcmp(marker->data, "Exif\0\0", 6) == 0) {
      return ExifOrientation(marker->data, marker->data_length);
    }
  }
  return 1;
}

// A window of a JPEG's (scaled) rows and columns, as DecodeJpegAsStored
// has placed it (its margin included), and the decoder's MCUs.
struct RowWindow {
  int64_t y = 0, rows = 0;
  int64_t x = 0, cols = 0;  // before jpeg_crop_scanline widens them
  int64_t full_height = 0, full_width = 0;
  int64_t mcu_height = 0, mcu_width = 0;  // output pixels per MCU
};

// Decodes `window` of a clean file from the MCUs it needs, as `starts`
// (CleanJpegs's, null: none kept) says where they begin (JpegRows): its
// columns' MCUs of its rows (JpegRows::Columns) where the window does not
// begin at the file's left edge, else the rows from the MCU row above it
// (JpegRows::StartingAt).
// Neither Huffman-decodes the MCUs above the window again, and Columns
// not those beside it either: the same pixels in less time
// (docs/pipelines.md). Only for a clean file: the verdict on any other
// comes from libjpeg's own reading from its first row to its end. False,
// and `out` to be written again, where the file is not one JpegRows
// follows, the stand-ins lack codes, or anything differs from what the
// file's own header showed: the caller then decodes the file as usual. On
// success, *x and *cols are the columns decoded (jpeg_crop_scanline's).
bool DecodeFromStarts(absl::Span<const uint8_t> encoded,
                      const CleanJpegs::Starts& starts,
                      const DecodeOptions& options, const RowWindow& window,
                      Sample* out, int64_t* x, int64_t* cols) {
  if (starts == nullptr) return false;
  std::optional<JpegRows> layout = JpegRows::Parse(encoded);
  const int scale = std::clamp(options.scale_eighths, 1, 8);
  if (!layout.has_value() ||
      layout->mcu_height() * scale != window.mcu_height * 8 ||
      layout->mcu_width() * scale != window.mcu_width * 8) {
    return false;
  }
  // The JPEG made of the window's MCUs, and where the file's pixel (0, 0)
  // lies in it. Its edges that cut the file (next to a stand-in, or where
  // the file goes on) differ from the file's by a pixel at most, which
  // the window's margin keeps from the pixels asked for.
  std::vector<uint8_t> data;
  int64_t origin_y = 0, origin_x = 0;
  bool made = false;
  const int64_t first_row = window.y / window.mcu_height;
  if (window.x > 0) {
    constexpr int kStride = JpegRows::kColumnStride;
    const int64_t first_mcu = window.x / window.mcu_width / kStride * kStride;
    const int64_t end_x = window.x + window.cols,
                  end_y = window.y + window.rows;
    const int64_t end_mcu = std::min<int64_t>(
        layout->mcus_per_row(), (end_x + kStride * window.mcu_width - 1) /
                                    (kStride * window.mcu_width) * kStride);
    const int64_t end_row =
        std::min<int64_t>(layout->mcu_rows(),
                          (end_y + window.mcu_height - 1) / window.mcu_height);
    int stand_in_mcus = 0;
    made =
        layout->Columns(encoded, *starts, static_cast<int>(first_row),
                        static_cast<int>(end_row), static_cast<int>(first_mcu),
                        static_cast<int>(end_mcu), &data, &stand_in_mcus);
    origin_y = first_row * window.mcu_height;
    origin_x = (first_mcu - stand_in_mcus) * window.mcu_width;
  }
  if (!made && first_row >= 1) {
    made = layout->StartingAt(encoded, *starts, static_cast<int>(first_row),
                              &data);
    origin_y = first_row * window.mcu_height - window.mcu_height;
    origin_x = 0;
  }
  if (!made) return false;
  jpeg_decompress_struct cinfo;
  JpegError err;
  CatchJpegErrors(&cinfo, &err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data.data(), data.size());
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = options.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.scale_num = static_cast<unsigned>(scale);
  cinfo.scale_denom = 8;
  jpeg_start_decompress(&cinfo);
  // The window in the made JPEG's pixels.
  const int64_t skip = window.y - origin_y;
  const int64_t left = window.x - origin_x;
  if (cinfo.max_v_samp_factor * cinfo.min_DCT_scaled_size !=
          window.mcu_height ||
      cinfo.max_h_samp_factor * cinfo.min_DCT_scaled_size != window.mcu_width ||
      skip < 0 || left < 0 || skip + window.rows > cinfo.output_height ||
      left + window.cols > cinfo.output_width ||
      origin_x + cinfo.output_width > window.full_width ||
      origin_y + cinfo.output_height > window.full_height) {
    jpeg_destroy_decompress(&cinfo);
    return false;
  }
  JDIMENSION xoffset = static_cast<JDIMENSION>(left);
  JDIMENSION crop_width = static_cast<JDIMENSION>(window.cols);
  if (window.cols < cinfo.output_width) {
    jpeg_crop_scanline(&cinfo, &xoffset, &crop_width);
  }
  *x = origin_x + xoffset;
  *cols = crop_width;
  if (skip > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(skip));
  const int64_t shape[] = {window.rows, *cols, options.channels};
  out->Reshape(DT_UINT8, shape);
  const int64_t row_bytes = *cols * options.channels;
  for (int64_t r = 0; r < window.rows; ++r) {
    JSAMPROW row = out->storage.data() + r * row_bytes;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_abort_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

// The JPEG as stored. With `orientation` (and options.adjust_orientation),
// the file's EXIF orientation is read from the header too: if it is not 1,
// nothing is decoded and it is returned there (the caller turns the image).
absl::Status DecodeJpegAsStored(absl::Span<const uint8_t> encoded,
                                const DecodeOptions& options, Sample* out,
                                DecodedRegion* region,
                                int* orientation = nullptr) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  jpeg_progress_mgr progress;
  CatchJpegErrors(&cinfo, &err);
  // Everything the longjmp skips over is plain data: no destructors.
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    if (err.warned) {
      return absl::DataLossError(
          absl::StrCat("JPEG: corrupt or truncated data: ", err.message));
    }
    return absl::DataLossError(absl::StrCat("JPEG: ", err.message));
  }
  jpeg_create_decompress(&cinfo);
  progress.progress_monitor = JpegProgress;
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, encoded.data(), encoded.size());
  const bool orient = orientation != nullptr && options.adjust_orientation;
  if (orient) jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&cinfo, TRUE);
  if (orient) {
    *orientation = SavedOrientation(&cinfo);
    if (*orientation != 1) {
      jpeg_destroy_decompress(&cinfo);
      return absl::OkStatus();
    }
  }
  const int64_t height = cinfo.image_height, width = cinfo.image_width;
  if (options.max_pixels > 0 && height * width > options.max_pixels) {
    jpeg_destroy_decompress(&cinfo);
    return TooLarge("JPEG", height, width, options.max_pixels);
  }
  if (cinfo.jpeg_color_space == JCS_CMYK ||
      cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return absl::UnimplementedError("JPEG: CMYK images are not supported");
  }
  // The whole-image buffers a progressive file needs (coefficients of
  // every block) stay within what its own pixels justify; beyond that the
  // decoder stops rather than allocate.
  cinfo.mem->max_memory_to_use = static_cast<long>(
      std::min<int64_t>(height * width * 8 + (16 << 20), int64_t{1} << 40));
  cinfo.out_color_space = options.channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  cinfo.scale_num =
      static_cast<unsigned>(std::clamp(options.scale_eighths, 1, 8));
  cinfo.scale_denom = 8;
  jpeg_calc_output_dimensions(&cinfo);
  const int64_t full_h = cinfo.output_height, full_w = cinfo.output_width;
  // The rows and columns asked for, within the image, widened by the
  // output pixels one chroma sample covers (the luma sampling factor) on
  // every side: the decoder's chroma upsampling reads a neighbour beyond a
  // window's edge, so a window decoded alone differs from the whole image
  // next to its edges, and that margin keeps the asked-for pixels exactly
  // the whole image's (image_decode_test: every sampling, both scan modes,
  // every DCT scale). A block of margin instead would cost 7 % more CPU
  // per image on DALI's validation crops of photos.
  const int64_t margin_y = cinfo.max_v_samp_factor;
  const int64_t margin_x = cinfo.max_h_samp_factor;
  int64_t y0 = std::clamp<int64_t>(options.y, 0, full_h);
  int64_t y1 = options.h > 0 ? std::min(full_h, y0 + options.h) : full_h;
  int64_t x0 = std::clamp<int64_t>(options.x, 0, full_w);
  int64_t x1 = options.w > 0 ? std::min(full_w, x0 + options.w) : full_w;
  if (options.h > 0) {
    y0 = std::max<int64_t>(0, y0 - margin_y);
    y1 = std::min(full_h, y1 + margin_y);
  }
  if (options.w > 0) {
    x0 = std::max<int64_t>(0, x0 - margin_x);
    x1 = std::min(full_w, x1 + margin_x);
  }
  const int64_t rows = y1 - y0;
  int64_t cols = x1 - x0;
  // A file decoded clean to its end before need not be read past the
  // window, nor outside its MCUs (CleanJpegs); any other is, and is then
  // known clean.
  const bool partial = y0 > 0 || y1 < full_h || x0 > 0 || x1 < full_w;
  const uint64_t key = partial ? CleanJpegs::Key(encoded) : 0;
  CleanJpegs::Starts starts;
  const bool clean = key != 0 && CleanJpegs::Get().Find(key, &starts);
  if (clean && (y0 > 0 || x0 > 0) && cols > 0) {
    const RowWindow window{
        .y = y0,
        .rows = rows,
        .x = x0,
        .cols = cols,
        .full_height = full_h,
        .full_width = full_w,
        .mcu_height = cinfo.max_v_samp_factor * cinfo.min_DCT_scaled_size,
        .mcu_width = cinfo.max_h_samp_factor * cinfo.min_DCT_scaled_size,
    };
    if (DecodeFromStarts(encoded, starts, options, window, out, &x0, &cols)) {
      jpeg_destroy_decompress(&cinfo);
      if (region != nullptr) *region = DecodedRegion{full_h, full_w, y0, x0};
      return absl::OkStatus();
    }
  }
  jpeg_start_decompress(&cinfo);
  if (cols > 0 && cols < full_w) {
    JDIMENSION xoffset = static_cast<JDIMENSION>(x0);
    JDIMENSION crop_width = static_cast<JDIMENSION>(cols);
    // Widens the window to whole blocks: xoffset moves left, the width
    // grows to keep the window's right edge.
    jpeg_crop_scanline(&cinfo, &xoffset, &crop_width);
    x0 = xoffset;
    cols = crop_width;
  }
  if (y0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y0));
  const int64_t shape[] = {rows, cols, options.channels};
  out->Reshape(DT_UINT8, shape);
  const int64_t row_bytes = cols * options.channels;
  for (int64_t r = 0; r < rows; ++r) {
    JSAMPROW row = out->storage.data() + r * row_bytes;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  if (region != nullptr) *region = DecodedRegion{full_h, full_w, y0, x0};
  if (clean) {
    jpeg_abort_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    return absl::OkStatus();
  }
  // The rows below the window are skipped (entropy-decoded, not
  // transformed) but for the last, which is read, so that the decoder
  // reaches the end of the data: damage anywhere fails the decode whatever
  // the window, and a file is corrupt or not whatever crop an epoch draws
  // for it. (A skip to the very end would take the end as read.)
  if (cinfo.output_scanline < cinfo.output_height) {
    const JDIMENSION below = cinfo.output_height - cinfo.output_scanline;
    if (below > 1) jpeg_skip_scanlines(&cinfo, below - 1);
    JSAMPARRAY last = (*cinfo.mem->alloc_sarray)(
        reinterpret_cast<j_common_ptr>(&cinfo), JPOOL_IMAGE,
        static_cast<JDIMENSION>(row_bytes), 1);
    jpeg_read_scanlines(&cinfo, last, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (key != 0) {
    // Where its MCUs begin, for its later windows: read once here (about
    // half a decode), repaid by the MCUs those windows no longer read
    // (docs/pipelines.md, "MCU starts").
    std::vector<JpegMcuStart> found;
    std::optional<JpegRows> layout = JpegRows::Parse(encoded);
    if (layout.has_value() && CleanJpegs::Get().HasRoom()) {
      layout->Scan(encoded, &found);
    }
    CleanJpegs::Get().Add(key, std::move(found));
  }
  return absl::OkStatus();
}

absl::Status DecodePng(absl::Span<const uint8_t> encoded,
                       const DecodeOptions& options, Sample* out,
                       DecodedRegion* region) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, encoded.data(),
                                        encoded.size())) {
    return absl::DataLossError(absl::StrCat("PNG: ", image.message));
  }
  const int64_t height = image.height, width = image.width;
  if (options.max_pixels > 0 && height * width > options.max_pixels) {
    png_image_free(&image);
    return TooLarge("PNG", height, width, options.max_pixels);
  }
  image.format = options.channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  const int64_t shape[] = {height, width, options.channels};
  out->Reshape(DT_UINT8, shape);
  if (!png_image_finish_read(&image, /*background=*/nullptr,
                             out->storage.data(), /*row_stride=*/0,
                             /*colormap=*/nullptr)) {
    std::string message = image.message;
    png_image_free(&image);
    return absl::DataLossError(absl::StrCat("PNG: ", message));
  }
  if (region != nullptr) *region = DecodedRegion{height, width, 0, 0};
  return absl::OkStatus();
}

// A PNG's size from its IHDR chunk, which must come first.
absl::StatusOr<ImageHeader> ReadPngHeader(absl::Span<const uint8_t> encoded) {
  if (encoded.size() < 24 || std::memcmp(encoded.data() + 12, "IHDR", 4) != 0) {
    return absl::DataLossError("PNG: no IHDR chunk where the header must be");
  }
  auto be32 = [&](size_t at) {
    return (int64_t{encoded[at]} << 24) | (int64_t{encoded[at + 1]} << 16) |
           (int64_t{encoded[at + 2]} << 8) | int64_t{encoded[at + 3]};
  };
  return ImageHeader{"png", be32(20), be32(16)};
}

absl::StatusOr<ImageHeader> ReadJpegHeader(absl::Span<const uint8_t> encoded,
                                           bool read_orientation) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  CatchJpegErrors(&cinfo, &err);
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return absl::DataLossError(absl::StrCat("JPEG: ", err.message));
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, encoded.data(), encoded.size());
  // APP1 (EXIF) kept for its orientation: at most one 64 KiB segment.
  if (read_orientation) jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xFFFF);
  jpeg_read_header(&cinfo, TRUE);
  ImageHeader header{"jpeg", cinfo.image_height, cinfo.image_width};
  header.orientation = SavedOrientation(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return header;
}

// DecodeJpegAsStored, turned upright as the file's EXIF orientation says:
// the stored image's window that holds the asked-for one is decoded, then
// turned.
absl::Status DecodeJpeg(absl::Span<const uint8_t> encoded,
                        const DecodeOptions& options, Sample* out,
                        DecodedRegion* region) {
  int orientation = 1;
  absl::Status as_stored_ok =
      DecodeJpegAsStored(encoded, options, out, region, &orientation);
  if (!as_stored_ok.ok() || orientation == 1) return as_stored_ok;
  auto header = ReadJpegHeader(encoded, /*read_orientation=*/false);
  if (!header.ok()) return header.status();
  const int eighths = std::clamp(options.scale_eighths, 1, 8);
  const int64_t stored_h = ScaledSize(header->height, eighths);
  const int64_t stored_w = ScaledSize(header->width, eighths);
  const int64_t upright_h = SwapsSides(orientation) ? stored_w : stored_h;
  const int64_t upright_w = SwapsSides(orientation) ? stored_h : stored_w;
  // The asked-for window, whole where h or w is 0, clipped to the image.
  Window asked;
  asked.y = std::clamp<int64_t>(options.y, 0, upright_h);
  asked.x = std::clamp<int64_t>(options.x, 0, upright_w);
  asked.h = options.h > 0 ? std::min(upright_h - asked.y, options.h)
                          : upright_h - asked.y;
  asked.w = options.w > 0 ? std::min(upright_w - asked.x, options.w)
                          : upright_w - asked.x;
  const Window stored = StoredWindow(asked, stored_h, stored_w, orientation);
  DecodeOptions as_stored = options;
  as_stored.adjust_orientation = false;
  as_stored.y = stored.y;
  as_stored.x = stored.x;
  as_stored.h = stored.h;
  as_stored.w = stored.w;
  Sample piece;
  DecodedRegion piece_region;
  absl::Status ok =
      DecodeJpegAsStored(encoded, as_stored, &piece, &piece_region);
  if (!ok.ok()) return ok;
  TurnUpright(piece.ref(), orientation, out);
  if (region != nullptr) {
    const Window decoded{piece_region.y, piece_region.x, piece.shape[0],
                         piece.shape[1]};
    const Window upright =
        UprightWindow(decoded, stored_h, stored_w, orientation);
    *region = DecodedRegion{upright_h, upright_w, upright.y, upright.x};
  }
  return absl::OkStatus();
}

absl::Status NotAnImage(absl::Span<const uint8_t> encoded) {
  std::string head;
  for (size_t i = 0; i < encoded.size() && i < 4; ++i) {
    absl::StrAppend(&head, i ? " " : "", absl::Hex(encoded[i]));
  }
  return absl::DataLossError(absl::StrCat(
      "not a JPEG or PNG file (", encoded.size(), " bytes",
      encoded.empty() ? "" : absl::StrCat(", starting ", head), ")"));
}

absl::Status CheckImage(const SampleRef& image) {
  if (image.type != DT_UINT8 || image.shape.size() != 3 ||
      (image.shape[2] != 1 && image.shape[2] != 3) || image.shape[0] < 1 ||
      image.shape[1] < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("encode: wants a uint8 HWC image of 1 or 3 channels, "
                     "got ",
                     DataTypeName(image.type), " ", ShapeString(image.shape)));
  }
  return absl::OkStatus();
}

}  // namespace

std::string SniffImageFormat(absl::Span<const uint8_t> encoded) {
  if (encoded.size() >= 3 && encoded[0] == 0xFF && encoded[1] == 0xD8 &&
      encoded[2] == 0xFF) {
    return "jpeg";
  }
  static constexpr uint8_t kPng[] = {0x89, 'P',  'N',  'G',
                                     '\r', '\n', 0x1A, '\n'};
  if (encoded.size() >= sizeof(kPng) &&
      std::memcmp(encoded.data(), kPng, sizeof(kPng)) == 0) {
    return "png";
  }
  return "";
}

absl::StatusOr<ImageHeader> ReadImageHeader(absl::Span<const uint8_t> encoded,
                                            bool read_orientation) {
  const std::string format = SniffImageFormat(encoded);
  if (format == "jpeg") return ReadJpegHeader(encoded, read_orientation);
  if (format == "png") return ReadPngHeader(encoded);
  return NotAnImage(encoded);
}

int DctScaleFor(int64_t height, int64_t width, int64_t target_height,
                int64_t target_width) {
  // libjpeg-turbo has vector code for the inverse DCT at 1/8, 2/8, 4/8 and
  // 8/8 only: at 3/8, 5/8, 6/8 or 7/8 its plain C transform makes a 500 x
  // 375 photo 20-60% slower to decode than at full size (measured with
  // libjpeg-turbo 2.1.5 on this project's machines), so those are skipped.
  for (int eighths : {1, 2, 4}) {
    if (ScaledSize(height, eighths) >= target_height &&
        ScaledSize(width, eighths) >= target_width) {
      return eighths;
    }
  }
  return 8;
}

absl::Status DecodeImage(absl::Span<const uint8_t> encoded, int channels,
                         Sample* out) {
  DecodeOptions options;
  options.channels = channels;
  return DecodeImage(encoded, options, out);
}

absl::Status DecodeImage(absl::Span<const uint8_t> encoded,
                         const DecodeOptions& options, Sample* out,
                         DecodedRegion* region) {
  if (options.channels != 1 && options.channels != 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "decode: channels must be 1 or 3, got ", options.channels));
  }
  const std::string format = SniffImageFormat(encoded);
  if (format == "jpeg") return DecodeJpeg(encoded, options, out, region);
  if (format == "png") return DecodePng(encoded, options, out, region);
  return NotAnImage(encoded);
}

absl::StatusOr<std::string> EncodeJpeg(const SampleRef& image, int quality) {
  absl::Status ok = CheckImage(image);
  if (!ok.ok()) return ok;
  jpeg_compress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  unsigned char* buffer = nullptr;
  unsigned long size = 0;  // NOLINT(runtime/int): libjpeg's type
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(buffer);
    return absl::InternalError(absl::StrCat("JPEG encode: ", err.message));
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = static_cast<JDIMENSION>(image.shape[1]);
  cinfo.image_height = static_cast<JDIMENSION>(image.shape[0]);
  cinfo.input_components = static_cast<int>(image.shape[2]);
  cinfo.in_color_space = image.shape[2] == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  const int64_t row_bytes = image.shape[1] * image.shape[2];
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row =
        const_cast<JSAMPROW>(image.data + cinfo.next_scanline * row_bytes);
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string bytes(reinterpret_cast<char*>(buffer), size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return bytes;
}

absl::StatusOr<std::string> EncodePng(const SampleRef& image) {
  absl::Status ok = CheckImage(image);
  if (!ok.ok()) return ok;
  png_image png;
  std::memset(&png, 0, sizeof(png));
  png.version = PNG_IMAGE_VERSION;
  png.width = static_cast<png_uint_32>(image.shape[1]);
  png.height = static_cast<png_uint_32>(image.shape[0]);
  png.format = image.shape[2] == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  png_alloc_size_t size = 0;
  if (!png_image_write_get_memory_size(png, size, 0, image.data, 0, nullptr)) {
    return absl::InternalError(absl::StrCat("PNG encode: ", png.message));
  }
  std::string bytes(size, '\0');
  if (!png_image_write_to_memory(&png, bytes.data(), &size, 0, image.data, 0,
                                 nullptr)) {
    return absl::InternalError(absl::StrCat("PNG encode: ", png.message));
  }
  bytes.resize(size);
  return bytes;
}

}  // namespace actorflow::internal::pipeline
