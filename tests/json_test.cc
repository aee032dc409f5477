#include "base/json.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>

namespace actorflow::internal {
namespace {

TEST_CASE("JSON lines keep the keys in the order written", "[json]") {
  Json line = {{"status", "ok"}, {"pieces", 8}};
  line["sinks"] = {{"b", 1}, {"a", 2}};
  CHECK(JsonLine(line) ==
        R"({"status":"ok","pieces":8,"sinks":{"b":1,"a":2}})");
}

TEST_CASE("JSON strings escape what JSON requires", "[json]") {
  CHECK(JsonLine("task 'a' said \"no\"\\") ==
        "\"task 'a' said \\\"no\\\"\\\\\"");
  CHECK(JsonLine("line\nnext\ttab\r") == "\"line\\nnext\\ttab\\r\"");
  CHECK(JsonLine(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  // A path with a Latin-1 byte in an error message: replaced, not thrown.
  CHECK(JsonLine(std::string("caf\xe9")) == "\"caf\xef\xbf\xbd\"");
}

TEST_CASE("JSON numbers read back exactly", "[json]") {
  CHECK(JsonLine(JsonNumber(640640000)) == "640640000");
  CHECK(JsonLine(JsonNumber(-3)) == "-3");
  CHECK(JsonLine(JsonNumber(0.1)) == "0.1");
  for (double v : {1.0 / 3, 6.4064e20, -123.456, 9007199254740993.0, 2.5e-7}) {
    CHECK(std::strtod(JsonLine(JsonNumber(v)).c_str(), nullptr) == v);
  }
  CHECK(JsonLine(JsonNumber(std::nan(""))) == "null");
  CHECK(JsonLine(JsonNumber(std::numeric_limits<double>::infinity())) ==
        "null");
  CHECK(JsonLine(JsonRounded(12.3456789, 3)) == "12.346");
  CHECK(JsonLine(JsonRounded(800.0004, 3)) == "800");
}

TEST_CASE("JSON text parses, and what is not JSON is discarded", "[json]") {
  const Json line = ParseJson(R"({"status":"ok","sinks":{"s":{"pieces":8}}})");
  REQUIRE(line.is_object());
  CHECK(line["sinks"]["s"]["pieces"] == 8);
  CHECK(ParseJson("actorflow: error").is_discarded());
  CHECK(ParseJson(R"({"status":)").is_discarded());
  CHECK(ParseJson("").is_discarded());
}

}  // namespace
}  // namespace actorflow::internal
