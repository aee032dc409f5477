#ifndef ACTORFLOW_RUNTIME_JSON_H_
#define ACTORFLOW_RUNTIME_JSON_H_

#include <string>

#include "absl/strings/string_view.h"

namespace actorflow {

// A JSON string literal, quotes included, with everything JSON requires
// escaped.
std::string JsonString(absl::string_view text);

// A JSON number that reads back as the same double; null for NaN and
// infinities, which JSON cannot express.
std::string JsonNumber(double value);

}  // namespace actorflow

#endif  // ACTORFLOW_RUNTIME_JSON_H_
