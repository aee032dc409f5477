#ifndef ACTORFLOW_BASE_JSON_H_
#define ACTORFLOW_BASE_JSON_H_

// The JSON lines the command, `launch` and the examples print, written and
// read with nlohmann::json (Debian's nlohmann-json3-dev). Include this from
// .cc files only: the library is a large header.
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "nlohmann/json.hpp"

namespace actorflow::internal {

// Keys come out in the order they were added: a summary reads "status"
// first, then what the command says about the run.
using Json = nlohmann::ordered_json;

// A number that reads back as `value`: whole numbers up to 2^53 as integers
// (a checksum of 640640000, not 640640000.0), null for NaN and infinities,
// which JSON cannot express.
Json JsonNumber(double value);

// `value` rounded to `decimals` places (milliseconds to the microsecond):
// summaries need no more, and shorter lines read better.
Json JsonRounded(double value, int decimals);

// `value` on one line without a newline. Text that is not UTF-8 (a path
// with Latin-1 bytes in an error message) gets U+FFFD instead of failing.
std::string JsonLine(const Json& value);

// Prints JsonLine(value) and a newline on stdout and flushes it: each line
// is a message to whoever reads the pipe (launch merges its ranks' lines).
void PrintJsonLine(const Json& value);

// The JSON value in `text`; a discarded value (is_discarded()) when `text`
// is not JSON. Never throws.
Json ParseJson(absl::string_view text);

}  // namespace actorflow::internal

#endif  // ACTORFLOW_BASE_JSON_H_
