#include "base/json.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

namespace actorflow::internal {

Json JsonNumber(double value) {
  if (!std::isfinite(value)) return nullptr;
  // Every integer up to 2^53 is exact in a double, so this loses nothing.
  if (value == std::floor(value) && std::fabs(value) < 9007199254740992.0) {
    return static_cast<int64_t>(value);
  }
  return value;
}

Json JsonRounded(double value, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return JsonNumber(std::round(value * scale) / scale);
}

std::string JsonLine(const Json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false,
                    Json::error_handler_t::replace);
}

void PrintJsonLine(const Json& value) {
  std::printf("%s\n", JsonLine(value).c_str());
  std::fflush(stdout);
}

Json ParseJson(absl::string_view text) {
  return Json::parse(text.begin(), text.end(), /*cb=*/nullptr,
                     /*allow_exceptions=*/false);
}

}  // namespace actorflow::internal
