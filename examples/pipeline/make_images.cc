// Writes JPEG and PNG files made from Fashion-MNIST images with libjpeg-turbo
// and libpng: test and benchmark data for the image pipeline.
//
//   make_images --out=DIR [--count=200] [--size=256] [--corrupt=0]
//
// Image i is Fashion-MNIST training image i, upscaled (bilinear) to
// --size x --size and made RGB by giving each channel its own gain; even
// images become JPEG, odd ones PNG, under DIR/<label>/. --corrupt=K also
// writes K broken files: a truncated JPEG, a truncated PNG, a file of
// garbage named .jpg, in turn.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "examples/pipeline/cli_flags.h"
#include "pipeline/dataset.h"
#include "pipeline/image_codec.h"
#include "pipeline/image_ops.h"

namespace {

namespace fs = std::filesystem;
using namespace actorflow;            // NOLINT(build/namespaces)
using namespace actorflow::pipeline;  // NOLINT(build/namespaces)

constexpr char kUsage[] =
    "make_images --out=DIR [--count=200] [--size=256] [--corrupt=0]\n"
    "  Writes --count JPEG/PNG images made from Fashion-MNIST (Debian's\n"
    "  dataset-fashion-mnist) under DIR/<label>/, upscaled to --size px,\n"
    "  plus --corrupt broken files (truncated JPEG, truncated PNG, garbage).\n";

absl::Status WriteFile(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out)
    return absl::UnavailableError(absl::StrCat("cannot write ", path.string()));
  return absl::OkStatus();
}

absl::Status Main(int argc, char** argv) {
  examples::CliFlags flags(
      {{"out", ""}, {"count", "200"}, {"size", "256"}, {"corrupt", "0"}});
  bool help = false;
  absl::Status ok = flags.Parse(argc, argv, &help);
  if (!ok.ok()) return ok;
  if (help) {
    std::cout << kUsage;
    return absl::OkStatus();
  }
  auto count = flags.Int("count", 1);
  auto size = flags.Int("size", 8);
  auto corrupt = flags.Int("corrupt", 0);
  for (const auto& v : {count, size, corrupt}) {
    if (!v.ok()) return v.status();
  }
  const fs::path out = flags.String("out");
  if (out.empty()) return absl::InvalidArgumentError("--out is required");
  const std::string dir = kFashionMnistDir;
  auto images = ReadIdx(dir + "/train-images-idx3-ubyte.gz");
  auto labels = ReadIdx(dir + "/train-labels-idx1-ubyte.gz");
  if (!images.ok()) return images.status();
  if (!labels.ok()) return labels.status();
  if (*count > images->dims[0]) {
    return absl::InvalidArgumentError(
        absl::StrCat("--count: at most ", images->dims[0]));
  }
  const int64_t rows = images->dims[1], cols = images->dims[2];
  Sample gray, big, rgb;
  std::string last_jpeg, last_png;
  for (int64_t i = 0; i < *count; ++i) {
    const int64_t shape[] = {rows, cols, 1};
    gray.Reshape(DT_UINT8, shape);
    std::copy_n(images->data.data() + i * rows * cols, rows * cols,
                gray.storage.data());
    ok = Resize(gray.ref(), *size, *size, &big);
    if (!ok.ok()) return ok;
    const int64_t rgb_shape[] = {*size, *size, 3};
    rgb.Reshape(DT_UINT8, rgb_shape);
    for (int64_t p = 0; p < *size * *size; ++p) {
      const int v = big.storage[p];
      rgb.storage[3 * p] = static_cast<uint8_t>(v);
      rgb.storage[3 * p + 1] = static_cast<uint8_t>(v * 3 / 4);
      rgb.storage[3 * p + 2] = static_cast<uint8_t>(255 - v / 2);
    }
    const fs::path klass = out / std::to_string(labels->data[i]);
    fs::create_directories(klass);
    const bool jpeg = i % 2 == 0;
    auto bytes = jpeg ? EncodeJpeg(rgb.ref(), 90) : EncodePng(rgb.ref());
    if (!bytes.ok()) return bytes.status();
    ok = WriteFile(klass / absl::StrCat("img", i, jpeg ? ".jpg" : ".png"),
                   *bytes);
    if (!ok.ok()) return ok;
    (jpeg ? last_jpeg : last_png) = *bytes;
  }
  if (*corrupt > 0) fs::create_directories(out / "broken");
  for (int64_t k = 0; k < *corrupt; ++k) {
    std::string bytes;
    std::string name;
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
    ok = WriteFile(out / "broken" / name, bytes);
    if (!ok.ok()) return ok;
  }
  std::cout << "wrote " << *count << " images"
            << (*corrupt ? absl::StrCat(" and ", *corrupt, " broken files")
                         : "")
            << " under " << out.string() << "\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  absl::Status status = Main(argc, argv);
  if (!status.ok()) {
    std::cerr << "make_images: " << status.message() << "\n" << kUsage;
    return 1;
  }
  return 0;
}
