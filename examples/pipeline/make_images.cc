// Writes JPEG and PNG files made from Fashion-MNIST images with libjpeg-turbo
// and libpng: test and benchmark data for the image pipeline.
//
//   make_images --out=DIR [--count=200] [--size=256] [--corrupt=0]
//   make_images --out=DIR --kind=photo [--count=200] [--width=500]
//               [--height=375] [--classes=10]
//
// Image i is Fashion-MNIST training image i, upscaled (bilinear) to
// --size x --size and made RGB by giving each channel its own gain; even
// images become JPEG, odd ones PNG, under DIR/<label>/. --corrupt=K also
// writes K broken files: a truncated JPEG, a truncated PNG, a file of
// garbage named .jpg, a JPEG whose header claims 60000 x 60000 pixels, in
// turn. --kind=photo writes photo-sized JPEGs with
// a photo's texture instead (pipeline::MakePhotoImage), for benchmarks.
#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "examples/pipeline/cli_flags.h"
#include "pipeline/dataset.h"
#include "pipeline/fixtures.h"

namespace {

namespace fs = std::filesystem;
using namespace actorflow;            // NOLINT(build/namespaces)
using namespace actorflow::pipeline;  // NOLINT(build/namespaces)

constexpr char kUsage[] =
    "make_images --out=DIR [--count=200] [--size=256] [--corrupt=0]\n"
    "  Writes --count JPEG/PNG images made from Fashion-MNIST (Debian's\n"
    "  dataset-fashion-mnist) under DIR/<label>/, upscaled to --size px,\n"
    "  plus --corrupt broken files (truncated JPEG, truncated PNG, garbage,\n"
    "  a JPEG claiming 60000 x 60000 pixels).\n"
    "make_images --out=DIR --kind=photo [--count=200] [--width=500]\n"
    "            [--height=375] [--classes=10]\n"
    "  Writes --count photo-sized JPEGs (quality 90) with a photo's\n"
    "  texture (noise over seven octaves, shapes, grain) under\n"
    "  DIR/class<k>/: what the image pipeline benchmarks decode.\n";

absl::Status Main(int argc, char** argv) {
  examples::CliFlags flags({{"out", ""},
                            {"count", "200"},
                            {"size", "256"},
                            {"corrupt", "0"},
                            {"kind", "fashion"},
                            {"width", "500"},
                            {"height", "375"},
                            {"classes", "10"}});
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
  const std::string kind = flags.String("kind");
  if (kind == "photo") {
    auto width = flags.Int("width", 1);
    auto height = flags.Int("height", 1);
    auto classes = flags.Int("classes", 1);
    for (const auto& v : {width, height, classes}) {
      if (!v.ok()) return v.status();
    }
    ok = WritePhotoImages(out.string(), *count, *height, *width, *classes);
    if (!ok.ok()) return ok;
    std::cout << "wrote " << *count << " photos of " << *width << " x "
              << *height << " under " << out.string() << "\n";
    return absl::OkStatus();
  }
  if (kind != "fashion") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kind: fashion or photo, got '", kind, "'"));
  }
  ok = WriteFashionImages(out.string(), *count, *size, *corrupt);
  if (!ok.ok()) return ok;
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
