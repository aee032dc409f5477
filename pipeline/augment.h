#ifndef ACTORFLOW_PIPELINE_AUGMENT_H_
#define ACTORFLOW_PIPELINE_AUGMENT_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pipeline/sample.h"

// DALI's image augmentations as plain functions on HWC images of uint8 or
// float32 (the output keeps the type; uint8 results are clamped to [0, 255]
// and rounded half up). Geometric ones sample bilinearly at pixel centres
// (a pixel (y, x) covers [y, y + 1) x [x, x + 1)); a point whose source
// lies outside the image takes the fill value (one per channel, or one
// for all).
namespace actorflow::internal::pipeline {

// out = shift * range + brightness * (center + contrast * (in - center)),
// range 255 for uint8 and 1 for float32.
absl::Status BrightnessContrast(const SampleRef& in, float brightness,
                                float shift, float contrast, float center,
                                Sample* out);

// out[c] = sum_k m[c][k] * in[k] + offset[c], on 3-channel images.
struct ColorMatrix {
  float m[3][3] = {{1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  float offset[3] = {0, 0, 0};
};
// hsv: in the YIQ colour space, the chroma (I, Q) is rotated by
// `hue_degrees` and scaled by `saturation`, and all of it by `value`.
ColorMatrix HsvMatrix(float hue_degrees, float saturation, float value);
// color_twist: hsv, then brightness and contrast (as BrightnessContrast,
// shift 0) on every channel.
ColorMatrix ColorTwistMatrix(float hue_degrees, float saturation, float value,
                             float brightness, float contrast, float center);
absl::Status ApplyColorMatrix(const SampleRef& in, const ColorMatrix& matrix,
                              Sample* out);

// DALI's color_space_conversion between these (3, 3, 1 and 3 channels):
// RGB and BGR swap the first and last channel; to gray, 0.299 R + 0.587 G +
// 0.114 B; from gray, the value in every channel (YCbCr: Y, with Cb and Cr
// 128). YCbCr is JPEG's full range (BT.601): Y as gray, Cb = -0.16873589 R
// - 0.33126411 G + 0.5 B + 128, Cr = 0.5 R - 0.41868759 G - 0.08131241 B +
// 128, and back R = Y + 1.402 (Cr - 128), G = Y - 0.34413629 (Cb - 128) -
// 0.71413629 (Cr - 128), B = Y + 1.772 (Cb - 128); YCbCr to gray is Y.
enum class ColorSpace { kRgb, kBgr, kGray, kYCbCr };
int ChannelsOf(ColorSpace space);
absl::Status ConvertColorSpace(const SampleRef& in, ColorSpace from,
                               ColorSpace to, Sample* out);

// The output of out_h x out_w whose pixel (y, x) samples the input at
// (sx, sy) = m * (x + 0.5, y + 0.5, 1) - 0.5 (m maps output to input
// coordinates, row-major 2 x 3).
absl::Status WarpAffine(const SampleRef& in, const double m[6], int64_t out_h,
                        int64_t out_w, const std::vector<float>& fill,
                        Sample* out);
// The size that holds an h x w image turned by `degrees`, each side one
// larger where that gives it the parity of the input side it mostly comes
// from (DALI's rule).
void RotatedSize(int64_t h, int64_t w, double degrees, int64_t* out_h,
                 int64_t* out_w);
// Counter-clockwise by `degrees` about the centre, into out_h x out_w
// (centred on the same point).
absl::Status Rotate(const SampleRef& in, double degrees, int64_t out_h,
                    int64_t out_w, const std::vector<float>& fill, Sample* out);

// DALI's displacement filters: output pixel (y, x) takes the input at a
// point (px, py) computed from y and x, in coordinates where pixel (y, x)
// covers [x, x + 1) x [y, y + 1): the pixel that holds the point (nearest,
// DALI's default) or bilinear about pixel centres (`linear`); the fill
// where the point lies outside. The output has the input's shape.
// water: px = x + ampl_x sin(freq_x y + phase_x),
//        py = y + ampl_y cos(freq_y x + phase_y)
// (from the pixel's corner, as DALI's: bilinear then reads between four
// pixels even where the waves are flat).
struct Wave {
  float ampl = 10;
  float freq = 0.04908738521234052f;  // 2 pi / 128
  float phase = 0;
};
absl::Status Water(const SampleRef& in, const Wave& along_x,
                   const Wave& along_y, bool linear,
                   const std::vector<float>& fill, Sample* out);
// sphere (a fisheye): a pixel centre at offset (dx, dy) from the image's
// centre reads the point at offset (r dx, r dy), r = |(dx, dy)| / d, d the
// larger half side in whole pixels.
absl::Status Sphere(const SampleRef& in, bool linear,
                    const std::vector<float>& fill, Sample* out);

// jitter: each pixel reads the one at a random whole offset along each axis,
// (Next() % n_degree) - n_degree / 2, drawn from `rng` row by row (a point
// outside the image gives the fill).
absl::Status Jitter(const SampleRef& in, int64_t n_degree, SampleRng* rng,
                    bool linear, const std::vector<float>& fill, Sample* out);

// JPEG's artefacts: an RGB uint8 image encoded at `quality` (clamped to
// 1..100) and decoded again.
absl::Status JpegCompressionDistortion(const SampleRef& in, int quality,
                                       Sample* out);

// Regions [y, y + h) x [x, x + w) (clipped to the image) set to the fill.
struct Region {
  int64_t y = 0, x = 0, h = 0, w = 0;
};
absl::Status Erase(const SampleRef& in, const std::vector<Region>& regions,
                   const std::vector<float>& fill, Sample* out);

// The image on a canvas of round(h * ratio) x round(w * ratio) filled
// with `fill`, at ((H - h) * paste_y, (W - w) * paste_x) rounded down.
absl::Status Paste(const SampleRef& in, double ratio, double paste_y,
                   double paste_x, const std::vector<float>& fill, Sample* out);

// Separable Gaussian blur with the given sigmas and odd windows, borders
// mirrored without repeating the edge (dcb|abcd|cba).
absl::Status GaussianBlur(const SampleRef& in, double sigma_y, double sigma_x,
                          int64_t window_y, int64_t window_x, Sample* out);
// The normalized kernel of `window` taps.
std::vector<float> GaussianKernel(double sigma, int64_t window);

// Any sample (any type and rank): out's axis i is in's axis perm[i].
absl::Status Transpose(const SampleRef& in, const std::vector<int64_t>& perm,
                       Sample* out);

// Any sample -> float32: in * scale + shift, element by element. scale and
// shift hold one value, or one per element of the last axis (a channel
// each, for HWC images).
absl::Status ScaleShift(const SampleRef& in, const std::vector<float>& scale,
                        const std::vector<float>& shift, Sample* out);

// Two samples -> float32, element by element: a + b, a - b, a * b, a / b
// (IEEE: a division by zero is an infinity or NaN), min, max, a to the
// power b, or atan2(a, b). The shapes broadcast as NumPy's.
enum class ArithOp { kAdd, kSub, kMul, kDiv, kMin, kMax, kPow, kAtan2 };
absl::StatusOr<ArithOp> ParseArithOp(const std::string& name);
absl::Status Arith(const SampleRef& a, const SampleRef& b, ArithOp op,
                   Sample* out);

// An integer sample (any shape) -> float32 with one more axis of
// `classes`: on where the index is the value, off elsewhere.
absl::Status OneHot(const SampleRef& in, int64_t classes, float on, float off,
                    Sample* out);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_AUGMENT_H_
