#include "runtime/json.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace actorflow {
namespace {

TEST_CASE("JSON strings escape what JSON requires", "[json]") {
  CHECK(JsonString("sink") == "\"sink\"");
  CHECK(JsonString("task 'a' said \"no\"\\") ==
        "\"task 'a' said \\\"no\\\"\\\\\"");
  CHECK(JsonString("line\nnext\ttab\r") == "\"line\\nnext\\ttab\\r\"");
  CHECK(JsonString(std::string("\x01\x1f", 2)) == "\"\\u0001\\u001f\"");
  CHECK(JsonString("") == "\"\"");
}

TEST_CASE("JSON numbers read back exactly", "[json]") {
  CHECK(JsonNumber(640640000) == "640640000");
  CHECK(JsonNumber(-3) == "-3");
  CHECK(JsonNumber(0.1) == "0.1");
  CHECK(JsonNumber(2.5e-7) == "2.5e-07");
  for (double v : {1.0 / 3, 6.4064e20, -123.456, 9007199254740993.0}) {
    CHECK(std::strtod(JsonNumber(v).c_str(), nullptr) == v);
  }
  CHECK(JsonNumber(std::nan("")) == "null");
  CHECK(JsonNumber(std::numeric_limits<double>::infinity()) == "null");
}

}  // namespace
}  // namespace actorflow
