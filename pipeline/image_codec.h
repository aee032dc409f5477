#ifndef ACTORFLOW_PIPELINE_IMAGE_CODEC_H_
#define ACTORFLOW_PIPELINE_IMAGE_CODEC_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "pipeline/sample.h"

namespace actorflow::pipeline {

// JPEG (libjpeg-turbo) and PNG (libpng) to uint8 HWC with `channels` 3
// (RGB) or 1 (gray), whatever the file stores. The format is told by the
// first bytes, not the file name. A corrupt or truncated file is an error
// (libjpeg's warnings, such as a premature end of data, count as errors:
// a half-gray image is not a sample).
absl::Status DecodeImage(absl::Span<const uint8_t> encoded, int channels,
                         Sample* out);

// "jpeg", "png" or "" from the first bytes.
std::string SniffImageFormat(absl::Span<const uint8_t> encoded);

// uint8 HWC (1 or 3 channels) to a file's bytes; for fixtures and tools.
absl::StatusOr<std::string> EncodeJpeg(const SampleRef& image, int quality);
absl::StatusOr<std::string> EncodePng(const SampleRef& image);

}  // namespace actorflow::pipeline

#endif  // ACTORFLOW_PIPELINE_IMAGE_CODEC_H_
