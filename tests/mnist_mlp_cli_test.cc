// //examples/mnist_mlp as users run it: two full epochs reach 85% test
// accuracy and end with the JSON line; the plan it writes validates; bad
// flags and data are JSON errors.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <fstream>
#include <string>

#include "actorflow/cuda_api.h"
#include "tests/cli_util.h"

namespace actorflow::internal::testing {
namespace {

const std::string kMlp = "examples/mnist_mlp/mnist_mlp";

TEST_CASE("mnist_mlp: two epochs reach 85% test accuracy") {
  CliResult r = RunCli("--epochs=2", ".", "", kMlp);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(r.last_line.rfind("{\"status\":\"ok\",\"epochs\":2,", 0) == 0);
  CHECK(std::stod(Field(r.last_line, "test_accuracy")) >= 0.85);
  const double loss = std::stod(Field(r.last_line, "final_loss"));
  CHECK((loss > 0 && loss < 0.5));
  CHECK(std::stod(Field(r.last_line, "samples_per_s")) > 0);
  CHECK(Contains(r.out, "epoch 1: train loss "));
  CHECK(Contains(r.out, "epoch 2: train loss "));
  CHECK(Contains(r.out, "samples/s"));
}

TEST_CASE("mnist_mlp: the reference loop prints the same numbers") {
  const std::string args =
      "--epochs=1 --train-limit=1280 --test-limit=500 --seed=5";
  CliResult plan = RunCli(args, ".", "", kMlp);
  CliResult reference = RunCli(args + " --reference", ".", "", kMlp);
  INFO(plan.out << reference.out);
  REQUIRE(plan.exit_code == 0);
  REQUIRE(reference.exit_code == 0);
  CHECK(Field(plan.last_line, "final_loss") ==
        Field(reference.last_line, "final_loss"));
  CHECK(Field(plan.last_line, "test_accuracy") ==
        Field(reference.last_line, "test_accuracy"));
}

TEST_CASE("mnist_mlp: its plan validates, its trace is written") {
  const std::string tmp = std::getenv("TEST_TMPDIR");
  CliResult r = RunCli(
      "--epochs=1 --train-limit=640 --test-limit=100 "
      "--write-plan='" +
          tmp + "/mlp.pbtxt' --trace='" + tmp + "/mlp.json'",
      ".", "", kMlp);
  INFO(r.out);
  REQUIRE(r.exit_code == 0);
  CHECK(Contains(r.out, "stream m0/cpu0/s0 busy "));
  CHECK(Contains(r.out, "stream m0/cpu0/s1 busy "));
  std::ifstream trace(tmp + "/mlp.json");
  CHECK(trace.good());
  CliResult v = RunCli("validate '" + tmp + "/mlp.pbtxt'");
  INFO(v.out);
  CHECK(v.exit_code == 0);
}

TEST_CASE("mnist_mlp: --gpu trains on GPU streams or says why not") {
  CliResult r = RunCli("--gpu --epochs=1 --train-limit=640 --test-limit=200",
                       ".", "", kMlp);
  INFO(r.out);
  if (cuda::DeviceAvailable(0).ok()) {
    REQUIRE(r.exit_code == 0);
    CHECK(Contains(r.out, "training as a plan on GPU streams"));
    CHECK(std::stod(Field(r.last_line, "test_accuracy")) > 0.5);
  } else {
    CHECK(r.exit_code == 1);
    CHECK(r.last_line.rfind(
              "{\"status\":\"error\",\"error\":\"--gpu: no usable GPU: ", 0) ==
          0);
  }
}

TEST_CASE("mnist_mlp: bad flags and data are JSON errors") {
  CliResult help = RunCli("--help", ".", "", kMlp);
  CHECK(help.exit_code == 0);
  CHECK(Contains(help.out, "--epochs=N"));
  CliResult flag = RunCli("--epoch=2", ".", "", kMlp);
  CHECK(flag.exit_code == 1);
  CHECK(Contains(flag.last_line, "unknown flag --epoch"));
  CliResult zero = RunCli("--epochs=0", ".", "", kMlp);
  CHECK(zero.exit_code == 1);
  CHECK(Contains(zero.last_line, "--epochs: wants an integer of at least 1"));
  CliResult data = RunCli("--data-dir=/nonexistent", ".", "", kMlp);
  CHECK(data.exit_code == 1);
  CHECK(data.last_line.rfind("{\"status\":\"error\",\"error\":", 0) == 0);
  CHECK(Contains(data.last_line, "/nonexistent/train-images-idx3-ubyte.gz"));
}

}  // namespace
}  // namespace actorflow::internal::testing
