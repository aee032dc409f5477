#include "pipeline/crop_outside.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "kernels/convert.h"

namespace actorflow::internal::pipeline {

void PlaceCropAnywhere(int64_t in_h, int64_t in_w, int64_t height,
                       int64_t width, const CropPlace& place, SampleRng* rng,
                       int64_t* y, int64_t* x) {
  if (height <= in_h && width <= in_w) {
    CropWindow window;
    // It fits: PlaceCrop cannot fail.
    PlaceCrop(in_h, in_w, height, width, place, rng, &window).IgnoreError();
    *y = window.y;
    *x = window.x;
    return;
  }
  auto corner = [&](int64_t in, int64_t size, float anchor) -> int64_t {
    const float p = place.random     ? static_cast<float>(rng->Uniform())
                    : place.anchored ? anchor
                                     : 0.5f;
    return static_cast<int64_t>(std::roundf(p * static_cast<float>(in - size)));
  };
  *y = corner(in_h, height, place.y);
  *x = corner(in_w, width, place.x);
}

absl::Status CropOutside(const SampleRef& in, int64_t y, int64_t x,
                         int64_t height, int64_t width,
                         const std::vector<float>& fill, bool trim,
                         Sample* out) {
  if (in.shape.size() != 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("crop: wants an HWC image, got ", ShapeString(in.shape)));
  }
  const int64_t in_h = in.shape[0], in_w = in.shape[1], c = in.shape[2];
  if (!fill.empty() && fill.size() != 1 &&
      static_cast<int64_t>(fill.size()) != c) {
    return absl::InvalidArgumentError(
        absl::StrCat("crop: fill_values has ", fill.size(),
                     " values for an image of ", c, " channel(s)"));
  }
  // The window's part inside the image.
  const int64_t top = std::clamp<int64_t>(y, 0, in_h);
  const int64_t bottom = std::clamp<int64_t>(y + height, 0, in_h);
  const int64_t left = std::clamp<int64_t>(x, 0, in_w);
  const int64_t right = std::clamp<int64_t>(x + width, 0, in_w);
  if (trim) {
    if (bottom <= top || right <= left) {
      return absl::InvalidArgumentError(
          absl::StrCat("crop: window ", height, "x", width, " at (", y, ", ", x,
                       ") misses the image of ", in_h, "x", in_w));
    }
    y = top;
    x = left;
    height = bottom - top;
    width = right - left;
  }
  const int64_t shape[] = {height, width, c};
  out->Reshape(in.type, shape);
  const int64_t element = DataTypeSize(in.type);
  const int64_t pixel = c * element;
  // One pixel of the fill, then every pixel of the output from it.
  Sample fill_pixel;
  const int64_t one[] = {c};
  fill_pixel.Reshape(in.type, one);
  absl::Status ok = VisitDataType(in.type, [&](auto tag) {
    using T = typename decltype(tag)::type;
    for (int64_t k = 0; k < c; ++k) {
      const float value = fill.empty() ? 0.0f : fill[fill.size() == 1 ? 0 : k];
      fill_pixel.as<T>()[k] = ConvertElement<T>(value);
    }
    return absl::OkStatus();
  });
  if (!ok.ok()) return ok;
  for (int64_t p = 0; p < height * width; ++p) {
    std::memcpy(out->storage.data() + p * pixel, fill_pixel.storage.data(),
                pixel);
  }
  if (bottom > top && right > left) {
    for (int64_t row = top; row < bottom; ++row) {
      std::memcpy(
          out->storage.data() + ((row - y) * width + (left - x)) * pixel,
          in.data + (row * in_w + left) * pixel, (right - left) * pixel);
    }
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
