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
#include "cli/flags.h"
#include "pipeline/dataset.h"
#include "pipeline/fixtures.h"

namespace {

namespace fs = std::filesystem;
using namespace actorflow;                      // NOLINT(build/namespaces)
using namespace actorflow::internal;            // NOLINT(build/namespaces)
using namespace actorflow::internal::pipeline;  // NOLINT(build/namespaces)

constexpr char kAbout[] =
    "--kind=fashion writes --count JPEG/PNG images made from Fashion-MNIST\n"
    "(Debian's dataset-fashion-mnist) under DIR/<label>/, upscaled to --size\n"
    "px, plus --corrupt broken files (truncated JPEG, truncated PNG, garbage,\n"
    "a JPEG claiming 60000 x 60000 pixels).\n"
    "--kind=photo writes --count photo-sized JPEGs (quality 90, --width x\n"
    "--height) with a photo's texture (noise over seven octaves, shapes,\n"
    "grain) under DIR/class<k>/: what the image pipeline benchmarks decode.";

struct Flags {
  std::string out;
  int64_t count = 200;
  int64_t size = 256;
  int64_t corrupt = 0;
  std::string kind = "fashion";
  int64_t width = 500;
  int64_t height = 375;
  int64_t classes = 10;
};

void Declare(FlagSet* set, Flags* f) {
  set->String("out", &f->out, "DIR", "where the images go").Required();
  set->Int("count", &f->count, "images to write", 1);
  set->Choice("kind", &f->kind, {"fashion", "photo"}, "what they look like");
  set->Int("size", &f->size, "fashion: side in pixels", 8);
  set->Int("corrupt", &f->corrupt, "fashion: broken files besides", 0);
  set->Int("width", &f->width, "photo: width in pixels", 1);
  set->Int("height", &f->height, "photo: height in pixels", 1);
  set->Int("classes", &f->classes, "photo: subdirectories (labels)", 1);
}

absl::Status Main(const Flags& f) {
  const fs::path out = f.out;
  if (f.kind == "photo") {
    absl::Status ok =
        WritePhotoImages(out.string(), f.count, f.height, f.width, f.classes);
    if (!ok.ok()) return ok;
    std::cout << "wrote " << f.count << " photos of " << f.width << " x "
              << f.height << " under " << out.string() << "\n";
    return absl::OkStatus();
  }
  absl::Status ok =
      WriteFashionImages(out.string(), f.count, f.size, f.corrupt);
  if (!ok.ok()) return ok;
  std::cout << "wrote " << f.count << " images"
            << (f.corrupt ? absl::StrCat(" and ", f.corrupt, " broken files")
                          : "")
            << " under " << out.string() << "\n";
  return absl::OkStatus();
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  FlagSet set("make_images --out=DIR [flags]", kAbout);
  Declare(&set, &flags);
  absl::Status status = set.Parse(argc, argv);
  if (set.help_requested()) {
    std::cout << set.Help();
    return 0;
  }
  if (status.ok()) status = Main(flags);
  if (!status.ok()) {
    std::cerr << "make_images: " << status.message() << " (see --help)\n";
    return 1;
  }
  return 0;
}
