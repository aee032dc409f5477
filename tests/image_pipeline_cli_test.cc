// //examples/pipeline:image_pipeline as users run it, on JPEG/PNG files
// written by make_images from Fashion-MNIST: its JSON line, failures,
// skip_sample, determinism across --threads and --prefetch, and the plan it
// writes passing `actorflow validate`.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "tests/cli_util.h"

namespace actorflow::internal::testing {
namespace {

const std::string kPipeline = "examples/pipeline/image_pipeline";

std::string Images() {
  static const std::string dir = [] {
    const std::string d = std::string(std::getenv("TEST_TMPDIR")) + "/images";
    CliResult made =
        RunCli("--out='" + d + "' --count=40 --size=64 --corrupt=2", ".", "",
               "examples/pipeline/make_images");
    REQUIRE(made.exit_code == 0);
    return d;
  }();
  return dir;
}

TEST_CASE("image_pipeline: a bad file fails the run with a JSON error") {
  CliResult r = RunCli("--dir='" + Images() + "' --crop=48 --batch=8", ".", "",
                       kPipeline);
  INFO(r.out);
  CHECK(r.exit_code == 1);
  CHECK(r.last_line.rfind("{\"status\":\"error\",\"error\":", 0) == 0);
  CHECK(Contains(r.last_line, "broken/"));
  CHECK(Contains(r.last_line, "operator 'decode"));
}

TEST_CASE(
    "image_pipeline: skip_sample counts the bad files, and the "
    "checksum is the same whatever the threads and prefetch") {
  std::string checksum;
  for (const char* tuning :
       {"--threads=1 --prefetch=1", "--threads=2 --prefetch=2",
        "--threads=3 --prefetch=4"}) {
    CliResult r = RunCli("--dir='" + Images() +
                             "' --crop=48 --batch=8 --seed=7 --epochs=2 "
                             "--on-error=skip_sample " +
                             tuning,
                         ".", "", kPipeline);
    INFO(tuning << "\n" << r.out);
    REQUIRE(r.exit_code == 0);
    CHECK(r.last_line.rfind("{\"status\":\"ok\",", 0) == 0);
    CHECK(Field(r.last_line, "images") == "80");
    CHECK(Field(r.last_line, "batches") == "10");
    CHECK(Field(r.last_line, "skipped") == "4");
    CHECK(std::stod(Field(r.last_line, "images_per_s")) > 0);
    CHECK(Contains(r.out, "skipped "));
    if (checksum.empty()) checksum = Field(r.last_line, "checksum");
    CHECK(Field(r.last_line, "checksum") == checksum);
  }
  CliResult other = RunCli("--dir='" + Images() +
                               "' --crop=48 --batch=8 --seed=8 --epochs=2 "
                               "--on-error=skip_sample",
                           ".", "", kPipeline);
  CHECK(Field(other.last_line, "checksum") != checksum);
}

TEST_CASE("image_pipeline: its plan validates, its trace is written") {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  CliResult r =
      RunCli("--dir='" + Images() +
                 "' --crop=48 --on-error=skip_sample --threads=2 "
                 "--write-plan='" +
                 tmp + "/plan.pbtxt' --trace='" + tmp + "/trace.json'",
             ".", "", kPipeline);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CliResult v = RunCli("validate '" + tmp + "/plan.pbtxt' --shapes");
  INFO(v.out);
  CHECK(v.exit_code == 0);
  CHECK(Contains(v.out, "task 'decode+resize+crop+flip+normalize@1'"));
  FILE* trace = std::fopen((tmp + "/trace.json").c_str(), "r");
  REQUIRE(trace != nullptr);
  std::fclose(trace);
}

TEST_CASE("image_pipeline: --help helps, bad flags are errors") {
  CliResult help = RunCli("--help", ".", "", kPipeline);
  CHECK(help.exit_code == 0);
  CHECK(Contains(help.out, "--on-error"));
  CHECK(Contains(help.out, "--prefetch"));
  CliResult unknown = RunCli("--dir=/tmp --colour=red", ".", "", kPipeline);
  CHECK(unknown.exit_code == 1);
  CHECK(Contains(unknown.last_line, "unknown flag --colour"));
  CliResult mode = RunCli("--dir=/tmp --on-error=ignore", ".", "", kPipeline);
  CHECK(mode.exit_code == 1);
  CHECK(Contains(mode.last_line, "--on-error"));
  CliResult missing = RunCli("", ".", "", kPipeline);
  CHECK(missing.exit_code == 1);
  CHECK(Contains(missing.last_line, "--dir is required"));
  CliResult nowhere = RunCli("--dir=/nonexistent/images", ".", "", kPipeline);
  CHECK(nowhere.exit_code == 1);
  CHECK(Contains(nowhere.last_line, "/nonexistent/images"));
}

}  // namespace
}  // namespace actorflow::internal::testing
