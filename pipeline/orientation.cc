#include "pipeline/orientation.h"

#include <libexif/exif-data.h>

#include <cstring>

namespace actorflow::internal::pipeline {

namespace {

// Upright (u, v) reads stored (r, c): with `transpose` r follows v and c
// follows u, else r follows u and c follows v; `flip_rows` counts r from
// the bottom, `flip_cols` c from the right.
struct Map {
  bool transpose, flip_rows, flip_cols;
};

Map MapOf(int orientation) {
  switch (orientation) {
    case 2:
      return {false, false, true};
    case 3:
      return {false, true, true};
    case 4:
      return {false, true, false};
    case 5:
      return {true, false, false};
    case 6:
      return {true, true, false};
    case 7:
      return {true, true, true};
    case 8:
      return {true, false, true};
    default:
      return {false, false, false};
  }
}

}  // namespace

int ExifOrientation(const uint8_t* exif, size_t size) {
  ExifData* data = exif_data_new_from_data(exif, static_cast<unsigned>(size));
  if (data == nullptr) return 1;
  int orientation = 1;
  ExifEntry* entry = exif_data_get_entry(data, EXIF_TAG_ORIENTATION);
  if (entry != nullptr && entry->format == EXIF_FORMAT_SHORT &&
      entry->components >= 1 && entry->size >= 2) {
    const int value =
        exif_get_short(entry->data, exif_data_get_byte_order(data));
    if (value >= 1 && value <= 8) orientation = value;
  }
  exif_data_unref(data);
  return orientation;
}

Window StoredWindow(const Window& upright, int64_t stored_h, int64_t stored_w,
                    int orientation) {
  const Map map = MapOf(orientation);
  // Along the stored rows: the upright rows (or columns, transposed).
  const int64_t r0 = map.transpose ? upright.x : upright.y;
  const int64_t rows = map.transpose ? upright.w : upright.h;
  const int64_t c0 = map.transpose ? upright.y : upright.x;
  const int64_t cols = map.transpose ? upright.h : upright.w;
  return Window{map.flip_rows ? stored_h - r0 - rows : r0,
                map.flip_cols ? stored_w - c0 - cols : c0, rows, cols};
}

Window UprightWindow(const Window& stored, int64_t stored_h, int64_t stored_w,
                     int orientation) {
  const Map map = MapOf(orientation);
  const int64_t r0 = map.flip_rows ? stored_h - stored.y - stored.h : stored.y;
  const int64_t c0 = map.flip_cols ? stored_w - stored.x - stored.w : stored.x;
  if (map.transpose) return Window{c0, r0, stored.w, stored.h};
  return Window{r0, c0, stored.h, stored.w};
}

void TurnUpright(const SampleRef& stored, int orientation, Sample* out) {
  const Map map = MapOf(orientation);
  const int64_t h = stored.shape[0], w = stored.shape[1];
  const int64_t pixel = stored.shape[2] * DataTypeSize(stored.type);
  const int64_t up_h = map.transpose ? w : h, up_w = map.transpose ? h : w;
  const int64_t shape[] = {up_h, up_w, stored.shape[2]};
  out->Reshape(stored.type, shape);
  for (int64_t u = 0; u < up_h; ++u) {
    for (int64_t v = 0; v < up_w; ++v) {
      int64_t r = map.transpose ? v : u;
      int64_t c = map.transpose ? u : v;
      if (map.flip_rows) r = h - 1 - r;
      if (map.flip_cols) c = w - 1 - c;
      std::memcpy(out->storage.data() + (u * up_w + v) * pixel,
                  stored.data + (r * w + c) * pixel, pixel);
    }
  }
}

}  // namespace actorflow::internal::pipeline
