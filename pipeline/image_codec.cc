#include "pipeline/image_codec.h"

#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
// jpeglib.h needs FILE and size_t declared first.
#include <jpeglib.h>
#include <png.h>

#include "absl/strings/str_cat.h"

namespace actorflow::pipeline {
namespace {

// libjpeg reports errors through a callback that must not return: it
// longjmps back to the decode call. Warnings (corrupt data that libjpeg
// would paper over) are kept and turned into an error afterwards.
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
  if (!err->warned) (*cinfo->err->format_message)(cinfo, err->message);
  err->warned = true;
}

absl::Status DecodeJpeg(absl::Span<const uint8_t> encoded, int channels,
                        Sample* out) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = JpegErrorExit;
  err.mgr.emit_message = JpegEmitMessage;
  // Everything the longjmp skips over is plain data: no destructors.
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return absl::DataLossError(absl::StrCat("JPEG: ", err.message));
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, encoded.data(), encoded.size());
  jpeg_read_header(&cinfo, TRUE);
  if (cinfo.jpeg_color_space == JCS_CMYK ||
      cinfo.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&cinfo);
    return absl::UnimplementedError("JPEG: CMYK images are not supported");
  }
  cinfo.out_color_space = channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_start_decompress(&cinfo);
  const int64_t height = cinfo.output_height;
  const int64_t width = cinfo.output_width;
  const int64_t shape[] = {height, width, channels};
  out->Reshape(DT_UINT8, shape);
  const int64_t row_bytes = width * channels;
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = out->storage.data() + cinfo.output_scanline * row_bytes;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  if (err.warned) {
    return absl::DataLossError(
        absl::StrCat("JPEG: corrupt or truncated data: ", err.message));
  }
  return absl::OkStatus();
}

absl::Status DecodePng(absl::Span<const uint8_t> encoded, int channels,
                       Sample* out) {
  png_image image;
  std::memset(&image, 0, sizeof(image));
  image.version = PNG_IMAGE_VERSION;
  if (!png_image_begin_read_from_memory(&image, encoded.data(),
                                        encoded.size())) {
    return absl::DataLossError(absl::StrCat("PNG: ", image.message));
  }
  image.format = channels == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
  const int64_t shape[] = {image.height, image.width, channels};
  out->Reshape(DT_UINT8, shape);
  if (!png_image_finish_read(&image, /*background=*/nullptr,
                             out->storage.data(), /*row_stride=*/0,
                             /*colormap=*/nullptr)) {
    std::string message = image.message;
    png_image_free(&image);
    return absl::DataLossError(absl::StrCat("PNG: ", message));
  }
  return absl::OkStatus();
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

absl::Status DecodeImage(absl::Span<const uint8_t> encoded, int channels,
                         Sample* out) {
  if (channels != 1 && channels != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("decode: channels must be 1 or 3, got ", channels));
  }
  const std::string format = SniffImageFormat(encoded);
  if (format == "jpeg") return DecodeJpeg(encoded, channels, out);
  if (format == "png") return DecodePng(encoded, channels, out);
  std::string head;
  for (size_t i = 0; i < encoded.size() && i < 4; ++i) {
    absl::StrAppend(&head, i ? " " : "", absl::Hex(encoded[i]));
  }
  return absl::DataLossError(absl::StrCat(
      "not a JPEG or PNG file (", encoded.size(), " bytes",
      encoded.empty() ? "" : absl::StrCat(", starting ", head), ")"));
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

}  // namespace actorflow::pipeline
