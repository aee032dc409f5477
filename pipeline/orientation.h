#ifndef ACTORFLOW_PIPELINE_ORIENTATION_H_
#define ACTORFLOW_PIPELINE_ORIENTATION_H_

#include <cstddef>
#include <cstdint>

#include "pipeline/sample.h"

// EXIF orientation: how an image stored one way is shown upright. 1 as
// stored; 2 mirrored left-right; 3 turned half round; 4 mirrored top-bottom;
// 5 transposed; 6 turned a quarter clockwise; 7 transposed the other way
// (transverse); 8 turned a quarter anticlockwise. 5 to 8 swap height and
// width.
namespace actorflow::internal::pipeline {

// The orientation an EXIF block (a JPEG's APP1 payload, "Exif\0\0" first)
// states (libexif reads it); 1 when it states none or cannot be read.
int ExifOrientation(const uint8_t* exif, size_t size);

inline bool SwapsSides(int orientation) { return orientation >= 5; }

// A window, rows [y, y + h) and columns [x, x + w).
struct Window {
  int64_t y = 0, x = 0, h = 0, w = 0;
};

// The window of the stored image (stored_h x stored_w) that holds the
// upright image's window `upright`.
Window StoredWindow(const Window& upright, int64_t stored_h, int64_t stored_w,
                    int orientation);
// The inverse: where the stored window `stored` lies in the upright image.
Window UprightWindow(const Window& stored, int64_t stored_h, int64_t stored_w,
                     int orientation);

// A decoded piece of the stored image (HWC, any element type) turned
// upright: `out` is what UprightWindow gives of its window.
void TurnUpright(const SampleRef& stored, int orientation, Sample* out);

}  // namespace actorflow::internal::pipeline

#endif  // ACTORFLOW_PIPELINE_ORIENTATION_H_
