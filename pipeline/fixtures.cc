#include "pipeline/fixtures.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pipeline/dataset.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"

namespace actorflow::internal::pipeline {
namespace {

namespace fs = std::filesystem;

absl::Status WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  if (!out) {
    return absl::UnavailableError(absl::StrCat("cannot write ", path.string()));
  }
  return absl::OkStatus();
}

uint64_t Hash(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) from a key.
float Signed(uint64_t key) {
  return static_cast<float>(Hash(key) >> 40) / 8388608.0f - 1.0f;
}

}  // namespace

void MakePhotoImage(uint64_t seed, int64_t height, int64_t width, Sample* out) {
  const int64_t shape[] = {height, width, 3};
  out->Reshape(DT_UINT8, shape);
  std::vector<float> plane(height * width * 3, 0.0f);
  // Octaves of value noise: a random lattice every `cell` pixels,
  // bilinearly interpolated; coarse octaves weigh most.
  for (int octave = 0; octave < 7; ++octave) {
    const int64_t cell = int64_t{2} << octave;  // 2 .. 128 px
    const float amplitude = 14.0f + 4.0f * static_cast<float>(octave);
    const int64_t gh = height / cell + 2, gw = width / cell + 2;
    std::vector<float> grid(gh * gw * 3);
    for (int64_t i = 0; i < gh * gw * 3; ++i) {
      grid[i] = amplitude * Signed(Hash(seed * 131 + octave) + i);
    }
    for (int64_t y = 0; y < height; ++y) {
      const int64_t gy = y / cell;
      const float fy = static_cast<float>(y % cell) / cell;
      for (int64_t x = 0; x < width; ++x) {
        const int64_t gx = x / cell;
        const float fx = static_cast<float>(x % cell) / cell;
        for (int c = 0; c < 3; ++c) {
          auto at = [&](int64_t r, int64_t q) {
            return grid[(r * gw + q) * 3 + c];
          };
          const float top = at(gy, gx) + (at(gy, gx + 1) - at(gy, gx)) * fx;
          const float bottom =
              at(gy + 1, gx) + (at(gy + 1, gx + 1) - at(gy + 1, gx)) * fx;
          plane[(y * width + x) * 3 + c] += top + (bottom - top) * fy;
        }
      }
    }
  }
  // A base color and a few soft ellipses, each with its own color.
  uint64_t key = Hash(seed ^ 0x5bd1e995ULL);
  float base[3];
  for (float& b : base) b = 128 + 60 * Signed(key++);
  struct Blob {
    float cy, cx, ry, rx, color[3];
  };
  std::vector<Blob> blobs(6 + Hash(key++) % 6);
  for (Blob& b : blobs) {
    b.cy = height * (0.5f + 0.5f * Signed(key++));
    b.cx = width * (0.5f + 0.5f * Signed(key++));
    b.ry = height * (0.1f + 0.15f * (1 + Signed(key++)));
    b.rx = width * (0.1f + 0.15f * (1 + Signed(key++)));
    for (float& c : b.color) c = 70 * Signed(key++);
  }
  for (int64_t y = 0; y < height; ++y) {
    for (int64_t x = 0; x < width; ++x) {
      float add[3] = {base[0], base[1], base[2]};
      for (const Blob& b : blobs) {
        const float dy = (y - b.cy) / b.ry, dx = (x - b.cx) / b.rx;
        const float d = dy * dy + dx * dx;
        // 1 inside, falling to 0 over an edge a few pixels wide.
        const float w = std::clamp(6.0f * (1.0f - d), 0.0f, 1.0f);
        for (int c = 0; c < 3; ++c) add[c] += w * b.color[c];
      }
      const float grain = 9.0f * Signed(Hash(seed * 7919 + y * width + x));
      for (int c = 0; c < 3; ++c) {
        const float v = plane[(y * width + x) * 3 + c] + add[c] + grain;
        out->storage[(y * width + x) * 3 + c] =
            static_cast<uint8_t>(std::clamp(v, 0.0f, 255.0f));
      }
    }
  }
}

absl::StatusOr<std::string> JpegClaiming(int height, int width) {
  if (height < 1 || width < 1 || height > 65535 || width > 65535) {
    return absl::InvalidArgumentError("a JPEG's sides are 1 to 65535");
  }
  Sample photo;
  MakePhotoImage(1, 48, 64, &photo);
  auto jpeg = EncodeJpeg(photo.ref(), 90);
  if (!jpeg.ok()) return jpeg.status();
  std::string bytes = *jpeg;
  // The baseline frame header SOF0: FF C0, length, precision, then height
  // and width, 16 bits each, big-endian.
  const size_t sof = bytes.find("\xFF\xC0", 2);
  if (sof == std::string::npos || sof + 9 > bytes.size()) {
    return absl::InternalError("the encoder wrote no baseline frame header");
  }
  bytes[sof + 5] = static_cast<char>(height >> 8);
  bytes[sof + 6] = static_cast<char>(height & 0xFF);
  bytes[sof + 7] = static_cast<char>(width >> 8);
  bytes[sof + 8] = static_cast<char>(width & 0xFF);
  return bytes;
}

absl::Status WritePhotoImages(const std::string& out_dir, int64_t count,
                              int64_t height, int64_t width, int64_t classes) {
  if (count < 0 || height < 1 || width < 1 || classes < 1) {
    return absl::InvalidArgumentError(
        "photos: count >= 0, height, width and classes >= 1");
  }
  const fs::path out = out_dir;
  Sample photo;
  std::error_code error;
  for (int64_t i = 0; i < count; ++i) {
    MakePhotoImage(static_cast<uint64_t>(i) + 1, height, width, &photo);
    const fs::path klass = out / absl::StrCat("class", i % classes);
    fs::create_directories(klass, error);
    auto bytes = EncodeJpeg(photo.ref(), 90);
    if (!bytes.ok()) return bytes.status();
    absl::Status ok =
        WriteFile(klass / absl::StrCat("photo", i, ".jpg"), *bytes);
    if (!ok.ok()) return ok;
  }
  return absl::OkStatus();
}

absl::Status WriteFashionImages(const std::string& out_dir, int64_t count,
                                int64_t size, int64_t corrupt) {
  const fs::path out = out_dir;
  const std::string dir = FashionMnistDir();
  auto images = ReadIdx(dir + "/train-images-idx3-ubyte.gz");
  auto labels = ReadIdx(dir + "/train-labels-idx1-ubyte.gz");
  if (!images.ok()) return images.status();
  if (!labels.ok()) return labels.status();
  if (count > images->dims[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat("count: at most ", images->dims[0]));
  }
  const int64_t rows = images->dims[1], cols = images->dims[2];
  Sample gray, big, rgb;
  std::string last_jpeg, last_png;
  std::error_code error;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t shape[] = {rows, cols, 1};
    gray.Reshape(DT_UINT8, shape);
    std::copy_n(images->data.data() + i * rows * cols, rows * cols,
                gray.storage.data());
    absl::Status ok = Resize(gray.ref(), size, size, &big);
    if (!ok.ok()) return ok;
    const int64_t rgb_shape[] = {size, size, 3};
    rgb.Reshape(DT_UINT8, rgb_shape);
    for (int64_t p = 0; p < size * size; ++p) {
      const int v = big.storage[p];
      rgb.storage[3 * p] = static_cast<uint8_t>(v);
      rgb.storage[3 * p + 1] = static_cast<uint8_t>(v * 3 / 4);
      rgb.storage[3 * p + 2] = static_cast<uint8_t>(255 - v / 2);
    }
    const fs::path klass = out / std::to_string(labels->data[i]);
    fs::create_directories(klass, error);
    const bool jpeg = i % 2 == 0;
    auto bytes = jpeg ? EncodeJpeg(rgb.ref(), 90) : EncodePng(rgb.ref());
    if (!bytes.ok()) return bytes.status();
    ok = WriteFile(klass / absl::StrCat("img", i, jpeg ? ".jpg" : ".png"),
                   *bytes);
    if (!ok.ok()) return ok;
    (jpeg ? last_jpeg : last_png) = *bytes;
  }
  if (corrupt > 0) fs::create_directories(out / "broken", error);
  for (int64_t k = 0; k < corrupt; ++k) {
    std::string bytes, name;
    if (k % 4 == 0 && !last_jpeg.empty()) {
      bytes = last_jpeg.substr(0, last_jpeg.size() / 2);
      name = absl::StrCat("truncated", k, ".jpg");
    } else if (k % 4 == 1 && !last_png.empty()) {
      bytes = last_png.substr(0, last_png.size() / 2);
      name = absl::StrCat("truncated", k, ".png");
    } else if (k % 4 == 3) {
      auto huge = JpegClaiming(60000, 60000);
      if (!huge.ok()) return huge.status();
      bytes = *huge;
      name = absl::StrCat("huge", k, ".jpg");
    } else {
      bytes = std::string(1000, '\x5a');
      name = absl::StrCat("garbage", k, ".jpg");
    }
    absl::Status ok = WriteFile(out / "broken" / name, bytes);
    if (!ok.ok()) return ok;
  }
  return absl::OkStatus();
}

}  // namespace actorflow::internal::pipeline
