#ifndef ACTORFLOW_PIPELINE_IMAGE_OPS_H_
#define ACTORFLOW_PIPELINE_IMAGE_OPS_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pipeline/image_codec.h"
#include "pipeline/sample.h"

// The per-sample image operators, as plain functions: the pipeline's
// stages call them, and so do the benchmark's sequential loop and its oneTBB
// pipeline. Images are HWC (height, width, channels); every function checks
// its input and names what is wrong with it.
namespace actorflow::internal::pipeline {

// Bilinear resize of a uint8 or float32 HWC image to height x width, pixel
// centres aligned (the half-pixel convention), edges clamped. `antialias`:
// where the image shrinks, the triangle filter widened by the scale
// instead (pipeline/resample.h), so no source pixel is skipped.
absl::Status Resize(const SampleRef& in, int64_t height, int64_t width,
                    Sample* out, bool antialias = false);
// Nearest-neighbour resize (DALI's INTERP_NN) of an HWC image of any
// element type: output pixel (y, x) is source pixel (floor((y + 0.5) *
// in_h / height), floor((x + 0.5) * in_w / width)), computed in float as
// DALI computes it and kept within the image.
absl::Status ResizeNearest(const SampleRef& in, int64_t height, int64_t width,
                           Sample* out);
// Where a crop window starts (PlaceCrop places it).
struct CropWindow {
  int64_t y = 0;
  int64_t x = 0;
};

// What part of a larger source an image holds: rows from y and columns
// from x of a source of full_h x full_w. y and x may be negative: the image
// then holds a margin before the source's first row or column.
struct ResizeArea {
  int64_t full_h = 0, full_w = 0;
  int64_t y = 0, x = 0;
};
// The window of out_h x out_w at `window` of what Resize(source, height,
// width) would make, from `in`, which holds the part of the source that
// `area` says (it must hold every source pixel the window reads: see
// SourceRows). With the whole source and the whole size, exactly Resize.
absl::Status ResizeWindow(const SampleRef& in, const ResizeArea& area,
                          int64_t height, int64_t width,
                          const CropWindow& window, int64_t out_h,
                          int64_t out_w, Sample* out, bool antialias = false);
// The source indices [begin, end) that outputs [first, first + count) of
// a resize from in_size to out_size read.
void SourceRows(int64_t in_size, int64_t out_size, int64_t first, int64_t count,
                int64_t* begin, int64_t* end, bool antialias = false);

// The size Resize should make so the shorter side becomes `shorter` and the
// aspect ratio is kept (rounded to the nearest pixel, at least 1).
void ShorterSideSize(int64_t height, int64_t width, int64_t shorter,
                     int64_t* out_height, int64_t* out_width);

// DALI's resize modes: how the extents asked for become an output size.
//   default: a side not asked for takes the other's scale; max_size then
//     limits each side on its own;
//   stretch: a side not asked for keeps the input's; max_size as default;
//   not_larger / not_smaller: one scale for both sides (the aspect ratio
//     kept), the smallest / largest of the sides asked for, lowered so that
//     no side passes its max_size.
enum class ResizeMode { kDefault, kStretch, kNotLarger, kNotSmaller };
absl::StatusOr<ResizeMode> ParseResizeMode(absl::string_view name);

struct ResizeRule {
  double height = 0;  // asked for; 0: not given
  double width = 0;
  ResizeMode mode = ResizeMode::kDefault;
  double max_height = 0;  // 0: no limit
  double max_width = 0;
};

// The size an in_h x in_w image resizes to under `rule`: each side rounded
// to the nearest pixel, at least 1. Nothing asked for: the input's size.
void RuleSize(int64_t in_h, int64_t in_w, const ResizeRule& rule,
              int64_t* out_h, int64_t* out_w);

// Where PlaceCrop puts a window: drawn uniformly (`random`), at DALI's
// normalized anchor (`anchored`: its first row is roundf(y * (in_h -
// height)), its first column likewise with x; y and x in [0, 1]), else
// centred, rounded down.
struct CropPlace {
  bool random = false;
  bool anchored = false;
  float y = 0.5f, x = 0.5f;
};

// The window of height x width inside an image of in_h x in_w: an error if
// it does not fit.
absl::Status PlaceCrop(int64_t in_h, int64_t in_w, int64_t height,
                       int64_t width, const CropPlace& place, SampleRng* rng,
                       CropWindow* window);

// The ImageNet ("Inception") crop of an in_h x in_w image: a window whose
// area is a fraction of the image's drawn uniformly from [area_lo, area_hi],
// whose aspect ratio (width / height) is drawn log-uniformly from
// [ratio_lo, ratio_hi], placed uniformly. After `attempts` draws that do
// not fit, the whole image cut to the nearest ratio in range, centred.
// Always at least 1 x 1 and inside the image.
struct CropBox {
  int64_t y = 0, x = 0;
  int64_t height = 0, width = 0;
};
CropBox PlaceRandomAreaCrop(int64_t in_h, int64_t in_w, double area_lo,
                            double area_hi, double ratio_lo, double ratio_hi,
                            int64_t attempts, SampleRng* rng);

// Copies the window of height x width at `window` (any element type).
absl::Status Crop(const SampleRef& in, const CropWindow& window, int64_t height,
                  int64_t width, Sample* out);

// Mirrors along the width (horizontal) and/or the height (vertical).
absl::Status Flip(const SampleRef& in, bool horizontal, bool vertical,
                  Sample* out);

// uint8 HWC in, float32 CHW out: crops the window of height x width,
// mirrors it horizontally when `mirror`, and maps each value v of channel c
// to (v - mean[c]) / std[c]. mean and std hold one value, or one per
// channel. `pad`: values of channels added after the image's (DALI's
// pad_output), each plane filled with its value.
absl::Status CropMirrorNormalize(const SampleRef& in, const CropWindow& window,
                                 int64_t height, int64_t width, bool mirror,
                                 const std::vector<float>& mean,
                                 const std::vector<float>& stddev, Sample* out,
                                 const std::vector<float>& pad = {});
// Its checks alone: the error it would return, or OK.
absl::Status CheckCropMirrorNormalize(const SampleRef& in,
                                      const CropWindow& window, int64_t height,
                                      int64_t width,
                                      const std::vector<float>& mean,
                                      const std::vector<float>& stddev);
// Its values written to `dst` ({channels + pad, height, width} floats), the
// checks passed; `stream`: past the cache (NormalizeRgbRow), for a batch's
// row.
void CropMirrorNormalizeInto(const SampleRef& in, const CropWindow& window,
                             int64_t height, int64_t width, bool mirror,
                             const std::vector<float>& mean,
                             const std::vector<float>& stddev, float* dst,
                             const std::vector<float>& pad = {},
                             bool stream = false);

// Decode, then resize, then crop, as one step that decodes only what the
// result needs: a JPEG at the smallest DCT scale (1/8, 2/8, 4/8 or whole)
// still covering the resize's target, and only the rows and columns the
// crop's window reads. The window is drawn from `rng` exactly as PlaceCrop
// draws it from the resized size, so it is the unfused chain's window.
struct DecodeCropSpec {
  DecodeOptions decode;  // channels, max_pixels
  // The resize: the shorter side to `shorter`, or to resize_h x resize_w;
  // none when all are 0.
  int64_t shorter = 0;
  int64_t resize_h = 0, resize_w = 0;
  // The crop: crop_h x crop_w, placed as PlaceCrop does; none when 0.
  int64_t crop_h = 0, crop_w = 0;
  CropPlace place{.random = true};
  // Or the ImageNet crop (when area_attempts > 0): the window
  // PlaceRandomAreaCrop draws from the image's size, resized to crop_h x
  // crop_w when those are set, else left at its own size. Only the
  // window's rows and columns are decoded, at full scale, so the result is
  // exactly decode, random_resized_crop[, resize].
  double area_lo = 0, area_hi = 0, ratio_lo = 0, ratio_hi = 0;
  int64_t area_attempts = 0;
  // The resize antialiased (Resize's `antialias`).
  bool antialias = false;
};
// `scratch` holds the decoded region between calls (reused). *bad_data
// says whether a failure is the file's (unreadable, too large) or the
// spec's (a window that does not fit).
absl::Status DecodeResizeCrop(absl::Span<const uint8_t> encoded,
                              const DecodeCropSpec& spec, SampleRng* rng,
                              Sample* scratch, Sample* out, bool* bad_data);

// Element conversion as the `cast` kernel converts (kernels/convert.h):
// floating values to an integer type are truncated toward zero, or with
// `round` first rounded to the nearest integer, halves away from zero
// (DALI's conversions), before they saturate at the type's range.
absl::Status CastSample(const SampleRef& in, DataType to, Sample* out,
                        bool round = false);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_IMAGE_OPS_H_
