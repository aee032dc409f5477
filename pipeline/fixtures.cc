#include "pipeline/fixtures.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "pipeline/dataset.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"

namespace actorflow::pipeline {
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

}  // namespace

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
    if (k % 3 == 0 && !last_jpeg.empty()) {
      bytes = last_jpeg.substr(0, last_jpeg.size() / 2);
      name = absl::StrCat("truncated", k, ".jpg");
    } else if (k % 3 == 1 && !last_png.empty()) {
      bytes = last_png.substr(0, last_png.size() / 2);
      name = absl::StrCat("truncated", k, ".png");
    } else {
      bytes = std::string(1000, '\x5a');
      name = absl::StrCat("garbage", k, ".jpg");
    }
    absl::Status ok = WriteFile(out / "broken" / name, bytes);
    if (!ok.ok()) return ok;
  }
  return absl::OkStatus();
}

}  // namespace actorflow::pipeline
