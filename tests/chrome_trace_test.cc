// The Chrome trace text, to the letter: viewers are strict about it.
// Times are microseconds, to the nanosecond, in their shortest form.
#include "diagnosis/chrome_trace.h"

#include <catch2/catch.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace actorflow::internal {
namespace {

TEST_CASE("a trace becomes Chrome trace events", "[trace]") {
  RunTrace trace;
  trace.origin_ns = 1'000'000;
  trace.tasks.push_back(
      {"src", "m0/cpu0/s0", false, {{0, 1'001'500, 1'002'000}}});
  trace.tasks.push_back(
      {"h\"2d", "m0/gpu0/s1", true, {{0, 1'003'000, 1'010'250}}});
  CHECK(ChromeTraceJson(trace) ==
        "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n"
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
        "\"args\":{\"name\":\"src [m0/cpu0/s0]\"}},\n"
        "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":0,"
        "\"args\":{\"sort_index\":0}},\n"
        "{\"name\":\"piece 0\",\"cat\":\"m0/cpu0/s0\",\"pid\":0,\"tid\":0,"
        "\"ph\":\"X\",\"ts\":1.5,\"dur\":0.5},\n"
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":1,"
        "\"args\":{\"name\":\"h\\\"2d [m0/gpu0/s1]\"}},\n"
        "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":0,\"tid\":1,"
        "\"args\":{\"sort_index\":1}},\n"
        "{\"name\":\"piece 0\",\"cat\":\"m0/gpu0/s1\",\"pid\":0,\"tid\":1,"
        "\"ph\":\"b\",\"id\":1,\"ts\":3},\n"
        "{\"name\":\"piece 0\",\"cat\":\"m0/gpu0/s1\",\"pid\":0,\"tid\":1,"
        "\"ph\":\"e\",\"id\":1,\"ts\":10.25}\n]}\n");
}

TEST_CASE("a trace is written to a file, and an unwritable path is named",
          "[trace]") {
  RunTrace trace;
  trace.tasks.push_back({"src", "m0/cpu0/s0", false, {{0, 0, 1}}});
  std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/trace.json";
  REQUIRE(WriteChromeTrace(trace, path).ok());
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  CHECK(text.str() == ChromeTraceJson(trace));

  absl::Status bad = WriteChromeTrace(trace, "/nonexistent/dir/trace.json");
  CHECK(absl::IsInvalidArgument(bad));
  CHECK(bad.message() ==
        "--trace: cannot write /nonexistent/dir/trace.json: No such file or "
        "directory");
}

}  // namespace
}  // namespace actorflow::internal
