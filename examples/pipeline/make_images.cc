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
    "  plus --corrupt broken files (truncated JPEG, truncated PNG, garbage).\n";

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
