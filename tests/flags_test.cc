#include "cli/flags.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

namespace actorflow::internal {
namespace {

// argv for Parse: the program name, then `args`.
absl::Status ParseArgs(FlagSet* flags, std::vector<std::string> args) {
  args.insert(args.begin(), "prog");
  return flags->Parse(args);
}

struct Values {
  std::string dir;
  int64_t threads = 1;
  double rate = 0.5;
  bool checksum = true;
  std::string mode = "fail";
};

void Declare(FlagSet* flags, Values* v) {
  flags->String("dir", &v->dir, "DIR", "the images").Required();
  flags->Int("threads", &v->threads, "worker threads", 1, 64);
  flags->Double("rate", &v->rate, "learning rate", 0);
  flags->Bool("checksum", &v->checksum, "hash every batch");
  flags->Choice("on_error", &v->mode, {"fail", "skip_sample"},
                "what a bad file does");
}

TEST_CASE("flags: both spellings, every type, defaults kept") {
  FlagSet flags("prog --dir=DIR [flags]", "About it.");
  Values v;
  Declare(&flags, &v);
  REQUIRE(ParseArgs(&flags, {"--dir", "/d", "--threads=8", "--rate=0.25",
                             "--checksum=false", "--on_error", "skip_sample"})
              .ok());
  CHECK(v.dir == "/d");
  CHECK(v.threads == 8);
  CHECK(v.rate == 0.25);
  CHECK_FALSE(v.checksum);
  CHECK(v.mode == "skip_sample");

  FlagSet again("prog", "");
  Values w;
  Declare(&again, &w);
  REQUIRE(ParseArgs(&again, {"--dir=/e", "--checksum"}).ok());
  CHECK(w.threads == 1);  // untouched default
  CHECK(w.checksum);      // a bare boolean is true
  CHECK_FALSE(again.help_requested());
}

TEST_CASE("flags: the other spelling of a name is taken, with a warning") {
  FlagSet flags("prog", "");
  Values v;
  Declare(&flags, &v);
  int64_t keep = 0;
  flags.Int("keep-last", &keep, "checkpoints kept");
  // The warning goes to stderr: read it back from a temporary file.
  std::fflush(stderr);
  const int saved = dup(fileno(stderr));
  std::FILE* captured = std::tmpfile();
  REQUIRE(captured != nullptr);
  dup2(fileno(captured), fileno(stderr));
  const absl::Status parsed = ParseArgs(
      &flags, {"--dir=/d", "--keep_last=3", "--on-error=skip_sample"});
  std::fflush(stderr);
  dup2(saved, fileno(stderr));
  close(saved);
  std::string warnings(4096, '\0');
  std::rewind(captured);
  warnings.resize(std::fread(warnings.data(), 1, warnings.size(), captured));
  std::fclose(captured);
  REQUIRE(parsed.ok());
  CHECK(keep == 3);
  CHECK(v.mode == "skip_sample");
  CHECK(flags.given("keep-last"));
  CHECK_THAT(warnings, Catch::Contains("--keep_last is spelled --keep-last"));
  CHECK_THAT(warnings, Catch::Contains("--on-error is spelled --on_error"));
  // A name that is neither spelling of a flag is still unknown.
  FlagSet other("prog", "");
  Values w;
  Declare(&other, &w);
  CHECK_FALSE(ParseArgs(&other, {"--dir=/d", "--keep-first=3"}).ok());
}

TEST_CASE("flags: each problem names the flag and what it wants") {
  auto error = [](std::vector<std::string> args) {
    FlagSet flags("prog", "");
    Values v;
    Declare(&flags, &v);
    absl::Status status = ParseArgs(&flags, std::move(args));
    REQUIRE_FALSE(status.ok());
    CHECK(status.code() == absl::StatusCode::kInvalidArgument);
    return std::string(status.message());
  };
  CHECK(error({"--dir=/d", "--threads=0"}) ==
        "--threads: wants an integer from 1 to 64, got '0'");
  CHECK(error({"--dir=/d", "--threads=x"}) ==
        "--threads: wants an integer from 1 to 64, got 'x'");
  CHECK(error({"--dir=/d", "--rate=-1"}) ==
        "--rate: wants a number of at least 0, got '-1'");
  CHECK(error({"--dir=/d", "--rate=nan"}) ==
        "--rate: wants a number of at least 0, got 'nan'");
  CHECK(error({"--dir=/d", "--checksum=yes"}) ==
        "--checksum: true or false, got 'yes'");
  CHECK(error({"--dir=/d", "--on_error=skip"}) ==
        "--on_error: fail or skip_sample, got 'skip'");
  CHECK(error({"--dir=/d", "--thread=2"}) ==
        "unknown flag --thread (flags: --dir, --threads, --rate, --checksum, "
        "--on_error, --help)");
  CHECK(error({"--dir"}) == "flag --dir needs a value");
  CHECK(error({"--threads=2"}) == "--dir is required");
  CHECK(error({"--dir="}) == "--dir is required");
  CHECK(error({"--dir=/d", "extra"}) ==
        "unexpected argument 'extra' (flags are --name=value)");
}

TEST_CASE("flags: --help stops parsing; the usage lists every flag") {
  FlagSet flags("prog --dir=DIR [flags]", "Reads DIR.", "Prints one line.");
  Values v;
  Declare(&flags, &v);
  REQUIRE(ParseArgs(&flags, {"--threads=x", "--help"}).ok() == false);
  FlagSet asked("prog --dir=DIR [flags]", "Reads DIR.", "Prints one line.");
  Declare(&asked, &v);
  REQUIRE(ParseArgs(&asked, {"-h", "--threads=x"}).ok());
  CHECK(asked.help_requested());
  const std::string help = asked.Help();
  CHECK(help ==
        "prog --dir=DIR [flags]\n"
        "\n"
        "Reads DIR.\n"
        "\n"
        "Flags:\n"
        "  --dir=DIR           the images (required)\n"
        "  --threads=N         worker threads (default 1)\n"
        "  --rate=X            learning rate (default 0.5)\n"
        "  --checksum=B        hash every batch (default true)\n"
        "  --on_error=fail|skip_sample\n"
        "                      what a bad file does (default fail)\n"
        "  --help              this text\n"
        "\n"
        "Prints one line.\n");
}

TEST_CASE("flags: an off-by-default boolean shows as its bare name") {
  bool quick = false;
  bool hidden_value = false;
  FlagSet flags("prog", "");
  flags.Bool("quick", &quick, "fewer samples");
  flags.Bool("internal", &hidden_value, "").Hidden();
  const std::string help = flags.Help();
  CHECK(help.find("  --quick             fewer samples\n") !=
        std::string::npos);
  CHECK(help.find("internal") == std::string::npos);
  REQUIRE(ParseArgs(&flags, {"--internal", "--quick=false"}).ok());
  CHECK(hidden_value);
  CHECK_FALSE(quick);
  CHECK(flags.given("quick"));
  absl::Status unknown = ParseArgs(&flags, {"--nope"});
  CHECK(std::string(unknown.message()) ==
        "unknown flag --nope (flags: --quick, --help)");
}

TEST_CASE("flags: a custom flag parses its own value and words its problem") {
  int64_t bytes = 0;
  FlagSet flags("prog", "");
  flags.Custom("size", "N[K|M]", "a size", [&bytes](const std::string& v) {
    if (v == "1K") {
      bytes = 1024;
      return std::string();
    }
    return "--size needs a byte count, got '" + v + "'";
  });
  REQUIRE(ParseArgs(&flags, {"--size=1K"}).ok());
  CHECK(bytes == 1024);
  CHECK(std::string(ParseArgs(&flags, {"--size", "x"}).message()) ==
        "--size needs a byte count, got 'x'");
  CHECK(flags.Help().find("  --size=N[K|M]       a size\n") !=
        std::string::npos);
}

TEST_CASE("flags: long help wraps under its column; positionals collected") {
  std::vector<std::string> files;
  int64_t n = 3;
  FlagSet flags("prog FILE... [flags]", "");
  flags.Positional(&files, "FILE...", "the inputs");
  flags.Int("n", &n,
            "a long explanation of what this number does, long enough that "
            "it has to wrap onto a second line of the usage");
  REQUIRE(ParseArgs(&flags, {"a.txt", "--n=4", "b.txt"}).ok());
  CHECK(files == std::vector<std::string>{"a.txt", "b.txt"});
  CHECK(n == 4);
  const std::string help = flags.Help();
  CHECK(help.find("  FILE...             the inputs\n") != std::string::npos);
  CHECK(help.find("  --n=N               a long explanation of what this "
                  "number does, long enough\n"
                  "                      that it has to wrap onto a second "
                  "line of the usage\n"
                  "                      (default 3)\n") != std::string::npos);
}

}  // namespace
}  // namespace actorflow::internal
